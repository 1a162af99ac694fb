package statuspage_test

import (
	"context"
	"github.com/go-dsync/dsync/leader/operator"
	"testing"
	"time"

	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestDrained: Drained lists a partition's members whose latest drain
// directive drains them, by ID, with the host and pid of those whose
// status is seen; none where the member store keeps no directives.
func TestDrained(t *testing.T) {
	ctx := context.Background()
	ms := leadertest.NewMemoryMembers()
	if err := ms.PutMember(ctx, "jobs", leader.Member{ID: "m1", Host: "h1", PID: 11, LastSeen: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		member string
		drain  bool
	}{{"m2", true}, {"m1", true}, {"m3", true}, {"m3", false}} {
		if _, err := operator.Drain(ctx, ms, "jobs", d.member, d.drain, "ops", "r-"+d.member); err != nil {
			t.Fatal(err)
		}
	}
	r := statuspage.NewReader(nil)
	r.Members, r.Seen = ms, time.Minute
	got, err := r.Drained(ctx, "jobs")
	if err != nil || len(got) != 2 || got[0].ID != "m1" || got[0].Host != "h1" || got[0].PID != 11 || got[0].Reason != "r-m1" ||
		got[1].ID != "m2" || got[1].Host != "" || got[1].PID != 0 || got[1].By != "ops" || got[1].At.IsZero() {
		t.Errorf("Drained = %+v, %v; want m1 (on h1 pid 11), then m2 (no status seen)", got, err)
	}
	if got, err := r.Drained(ctx, "other"); err != nil || len(got) != 0 {
		t.Errorf("Drained of a partition without drains = %+v, %v; want none", got, err)
	}
	r.Members = membersOnly{ms}
	if got, err := r.Drained(ctx, "jobs"); err != nil || got != nil {
		t.Errorf("Drained from a store without directives = %+v, %v; want none", got, err)
	}
}

// membersOnly is a member store that keeps no directives.
type membersOnly struct{ leader.MemberStore }
