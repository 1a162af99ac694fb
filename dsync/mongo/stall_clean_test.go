package dsyncmongo

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestStallRecordsEndAfterTheRetention: the cleaning of long-expired
// sessions deletes the stall records sent more than stallRetention ago
// (store time), and keeps the others and every revocation and live
// session beside them.
func TestStallRecordsEndAfterTheRetention(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	st, err := NewStore(mongotest.NewDatabase(t), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	now := st.ServerTime().Earliest
	const session = "live0000000000000000"
	if err := st.InsertSession(ctx, driver.Session{ID: session, ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
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
	st.sessions.clean(ctx)
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
