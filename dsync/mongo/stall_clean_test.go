package dsyncmongo

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestStallRecordsEndAfterTheRetention: the cleaning of old records
// deletes the stall records sent more than stallRetention ago
// (store time), and keeps the others and every revocation and live
// session beside them.
func TestStallRecordsEndAfterTheRetention(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	st, now := storeWithLiveSession(ctx, t, mongotest.NewDatabase(t))
	const session = liveSession
	if err := st.Roles().Revocations.Revoke(ctx, driver.Revocation{Session: session, By: "op", Reason: "test", At: now.Add(-2 * stallRetention)}); err != nil {
		t.Fatal(err)
	}
	for nonce, at := range map[string]time.Time{
		"old00000000000000000":  now.Add(-stallRetention - time.Minute), // goes
		"older0000000000000000": now.Add(-2 * stallRetention),           // goes
		"lately00000000000000":  now.Add(-stallRetention + time.Minute), // stays: within the retention
		"fresh000000000000000":  now,                                    // stays
	} {
		if err := st.Roles().Stalls.RecordStall(ctx, driver.Stall{Key: "k", Token: 1, Session: session, Nonce: nonce, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	st.clean(ctx)
	got, err := st.Roles().Stalls.Stalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range got {
		left = append(left, s.Nonce)
	}
	slices.Sort(left)
	if want := []string{"fresh000000000000000", "lately00000000000000"}; !slices.Equal(left, want) {
		t.Errorf("stall records after the cleaning: %q, want %q", left, want)
	}
	if rs, err := st.Roles().Revocations.Revocations(ctx); err != nil || len(rs) != 1 {
		t.Errorf("revocations after the cleaning = %+v, %v; want the one of the live session", rs, err)
	}
	if _, found, err := st.GetSession(ctx, session); err != nil || !found {
		t.Errorf("GetSession(%s) after the cleaning = found %v, %v; want found", session, found, err)
	}
}

// TestCloseCleansOldRecords: seen through the command monitor, Close of
// a store that made a session deletes the long-expired sessions in one
// delete of the sessions collection and the old records (stall records
// here) in one delete of the records collection (on FerretDB, each a find
// of the _ids it selects and a delete by _id), then reads the
// revocations: however many of each there are.
func TestCloseCleansOldRecords(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	var (
		mu      sync.Mutex
		on      bool
		sent    []string
		deletes []string // the collection of each delete
	)
	c := &counter{onStart: func(e *event.CommandStartedEvent) {
		k := kindOf(e)
		if k == clockSample || slices.Contains([]string{"hello", "isMaster", "ping", "buildInfo", "endSessions", "killCursors"}, k) {
			return
		}
		mu.Lock()
		if on {
			sent = append(sent, k)
			if k == "delete" {
				deletes = append(deletes, e.Command.Lookup("delete").StringValue())
			}
		}
		mu.Unlock()
	}}
	db := mongotest.NewDatabase(t, c.monitor())
	st, now := storeWithLiveSession(ctx, t, db)
	const session = liveSession
	for i, id := range []string{"dead0000000000000000", "dead1000000000000000"} {
		if err := st.InsertSession(ctx, driver.Session{ID: id, Gen: i + 1, ExpiresAt: now.Add(-sessionRetention - time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, nonce := range []string{"old00000000000000000", "older0000000000000000"} {
		if err := st.Roles().Stalls.RecordStall(ctx, driver.Stall{Key: "k", Token: 1, Session: session, Nonce: nonce, At: now.Add(-2 * stallRetention)}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	on = true
	mu.Unlock()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got, gotDeletes := sent, deletes
	mu.Unlock()
	t.Logf("Close sent %q, deleting from %q", got, gotDeletes)
	want := []string{DefaultCollection + sessionsSuffix, DefaultCollection + recordsSuffix}
	if !slices.Equal(gotDeletes, want) || len(got) > 5 {
		t.Errorf("Close sent %q, deleting from %q; want one delete from each of %q and at most five commands (with the revocations' find)", got, gotDeletes, want)
	}
	// Read back through another store: the old sessions and stall records
	// went.
	other, err := NewStore(mongotest.SameDatabase(t, db), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ss, err := other.Roles().Stalls.Stalls(ctx); err != nil || len(ss) != 0 {
		t.Errorf("stall records after Close = %+v, %v; want none", ss, err)
	}
	if _, found, err := other.GetSession(ctx, "dead0000000000000000"); err != nil || found {
		t.Errorf("GetSession(dead0...) after Close = found %v, %v; want gone", found, err)
	}
}
