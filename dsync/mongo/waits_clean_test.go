package dsyncmongo

import (
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestWaitRecordsEndAfterTheRetention: the cleaning of old records
// deletes the wait notes and deadlock records sent more than
// waitRetention ago (store time), and keeps the others, a stall record
// and the live session beside them. A set's latest note is then its
// latest kept.
func TestWaitRecordsEndAfterTheRetention(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	st, now := storeWithLiveSession(ctx, t, mongotest.NewDatabase(t))
	const session = liveSession
	if err := st.Roles().Stalls.RecordStall(ctx, driver.Stall{Key: "k", Token: 1, Session: session, Nonce: "n", At: now.Add(-2 * waitRetention)}); err != nil {
		t.Fatal(err)
	}
	ws, ds := st.Roles().Waits, st.Roles().Deadlocks
	ages := []time.Duration{2 * waitRetention, waitRetention + time.Minute, waitRetention - time.Minute, 0} // the first two go
	for i, age := range ages {
		at := now.Add(-age)
		w := driver.Wait{Set: "set", N: uint64(i + 1), Key: "k", Epoch: 2, Nonce: "w", Holds: []driver.ClaimRef{{Key: "j", Epoch: 1, Nonce: "h"}}, Session: session, At: at}
		if err := ws.PutWait(ctx, w); err != nil {
			t.Fatal(err)
		}
		if err := ds.PutDeadlock(ctx, driver.Deadlock{Victim: "set", N: uint64(i + 1), Session: session, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	st.clean(ctx)

	waits, err := ws.ListWaits(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	deadlocks, err := ds.ListDeadlocks(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var leftW, leftD []uint64
	for _, w := range waits {
		leftW = append(leftW, w.N)
	}
	for _, d := range deadlocks {
		leftD = append(leftD, d.N)
	}
	slices.Sort(leftW)
	slices.Sort(leftD)
	if want := []uint64{3, 4}; !slices.Equal(leftW, want) || !slices.Equal(leftD, want) {
		t.Errorf("after the cleaning: notes %v and deadlock records %v left; want %v of each", leftW, leftD, want)
	}
	if w, found, err := ws.LatestWait(ctx, "set"); err != nil || !found || w.N != 4 {
		t.Errorf("LatestWait after the cleaning = note %d, found %v, %v; want note 4", w.N, found, err)
	}
	if stalls, err := st.Roles().Stalls.Stalls(ctx); err != nil || len(stalls) != 0 {
		t.Errorf("stall records after the cleaning = %+v, %v; want none (older than their retention)", stalls, err)
	}
	if _, found, err := st.GetSession(ctx, session); err != nil || !found {
		t.Errorf("GetSession(%s) after the cleaning = found %v, %v; want found", session, found, err)
	}
}
