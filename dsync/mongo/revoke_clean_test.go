package dsyncmongo

import (
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestRevocationsEndWithTheirSessions: the cleaning of long-expired
// sessions deletes a revocation once it can no longer matter (the record
// is older than the retention, and no document of its session expires
// later than the retention ago, or there is none), and keeps every other:
// one whose session is live, even long after the revoke (its owner may
// still renew it, and must still read the record), and one revoked a
// moment ago. Before, every record stayed forever.
func TestRevocationsEndWithTheirSessions(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	st, now := quietStore(ctx, t, mongotest.NewDatabase(t))
	long := now.Add(-sessionRetention - time.Minute) // past the retention
	for _, s := range []struct {
		id      string
		expires []time.Time // of its generations
		revoked time.Time
	}{
		{"dead0000000000000000", []time.Time{long}, long},                                     // goes
		{"deadgens000000000000", []time.Time{long, long.Add(30 * time.Second)}, long},         // goes
		{"gone0000000000000000", nil, long},                                                   // goes: no documents
		{"live0000000000000000", []time.Time{long, now.Add(time.Minute)}, long},               // stays: generation 1 is live
		{"lately00000000000000", []time.Time{now.Add(-sessionRetention + time.Minute)}, long}, // stays: expired within the retention
		{"fresh000000000000000", []time.Time{long}, now},                                      // stays: revoked a moment ago
	} {
		for gen, exp := range s.expires {
			if err := st.InsertSession(ctx, driver.Session{ID: s.id, Gen: gen, ExpiresAt: exp}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Roles().Revocations.Revoke(ctx, driver.Revocation{Session: s.id, By: "op", Reason: "test", At: s.revoked}); err != nil {
			t.Fatal(err)
		}
	}
	st.sessions.clean(ctx)
	rs, err := st.Roles().Revocations.Revocations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, r := range rs {
		left = append(left, r.Session)
	}
	slices.Sort(left)
	if want := []string{"fresh000000000000000", "lately00000000000000", "live0000000000000000"}; !slices.Equal(left, want) {
		t.Errorf("revocations after the cleaning: %q, want %q", left, want)
	}
}
