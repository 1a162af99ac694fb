package integration

import (
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// lockSetKeys is how many keys the lock-set workers draw their sets from:
// few, so that sets overlap and wait for each other.
const lockSetKeys = 6

// Fault 9: lock sets (dsync/lockset) under faults of every kind: four
// worker processes each take sets of 2 to 4 of lockSetKeys keys, named in
// a random order. No key is held by two at once, each key's tokens
// increase, every grant is whole (each member held, with the token the
// set reports: the worker fails otherwise), and sets are granted again
// after every fault (none stuck).
func TestLockSetsUnderFaults(t *testing.T) {
	t.Parallel()
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	cfg := baseConfig()
	cfg.Mode, cfg.Key, cfg.Keys = worker.ModeLockSet, "set", lockSetKeys
	cfg.Register = "" // a register goes with one key
	cfg.HoldFor = 150 * time.Millisecond
	c := newCluster(t, srv.URI(), db, cfg)
	c.viaProxy = true
	c.startN(4, nil)
	grantAfter := func(t0 int64) func(history.Event) bool {
		return func(ev history.Event) bool {
			return ev.Ev == history.EvAcquire && ev.Kind == history.KindSetMember && ev.T > t0
		}
	}
	counts := c.faultRounds(srv, kindsButGuest(t), "set grant", grantAfter, cfg.HoldFor/2, 5)
	r := c.check()
	if r.Sets == 0 {
		t.Fatal("no lock-set grant recorded")
	}
	t.Logf("lock sets: faults %v; %d grants, %d member holds, %d handoffs", counts, r.Sets, r.NumHolds, r.Handoffs)
}

// setControl: a lock-set grant with a member's record removed is a set
// granted in part, which the checker must report.
func (c *cluster) setControl(events []history.Event) {
	c.t.Helper()
	i := slices.IndexFunc(events, func(ev history.Event) bool {
		return ev.Ev == history.EvAcquire && ev.Kind == history.KindSetMember
	})
	if i < 0 {
		return
	}
	partial := slices.Delete(slices.Clone(events), i, i+1)
	detected := history.Check(partial, nil).Has(history.KindPartialSet)
	if !detected {
		c.t.Errorf("negative control: the checker accepted a lock set granted in part (grant %s without %s)", events[i].WID, events[i].Key)
	}
	summary.negative(detected)
}
