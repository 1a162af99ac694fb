package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// readsStore counts a store's reads: by ID, of sessions, and of runs;
// with noRuns, it answers every run ErrRunsUnsupported (the MongoDB
// driver on FerretDB).
type readsStore struct {
	*memory.Store
	gets, sessions, runs int
}

func newReadsStore(noRuns bool) *readsStore {
	s := &readsStore{}
	s.Store = memory.New().Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		switch c.Op {
		case "Get":
			s.gets++
		case "GetSession":
			s.sessions++
		case "GetRun":
			if s.runs++; noRuns {
				return driver.ErrRunsUnsupported
			}
		}
		return nil
	})
	return s
}

// runRig is a store and engines on it, each with a session of its own.
type runRig struct {
	t     *testing.T
	store *readsStore
}

func (r runRig) engine(bug queue.Bug) (*queue.Engine, string) {
	e, err := queue.New(r.store, fixedClock{}, queue.DefaultConfig())
	if err != nil {
		r.t.Fatal(err)
	}
	e.SetBug(bug)
	sess, _, err := e.OpenSession(context.Background(), time.Minute)
	if err != nil {
		r.t.Fatal(err)
	}
	return e, sess
}

func (r runRig) claim(e *queue.Engine, sess, owner string, terms queue.Terms) *queue.Claim {
	r.t.Helper()
	c, err := e.Claim(context.Background(), "k", owner, sess, terms, false)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// TestWalkPastLiveReadersIsOneRun: a reader behind many live readers, above
// a release, reads one run of the queue and nothing else (no marker,
// session or claim by ID, not even its own claim back), and holds.
func TestWalkPastLiveReadersIsOneRun(t *testing.T) {
	ctx := context.Background()
	r := runRig{t, newReadsStore(false)}
	shared := queue.Terms{Mode: queue.Shared}
	// A reader that came and went: the walks stop at its release.
	e0, s0 := r.engine(queue.NoBug)
	c0 := r.claim(e0, s0, "gone", shared)
	if head, _, err := e0.Walk(ctx, c0); err != nil || !head {
		t.Fatalf("the first reader: Walk = %v, %v", head, err)
	}
	if err := e0.End(ctx, c0, true); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		e, sess := r.engine(queue.NoBug)
		c := r.claim(e, sess, "reader", shared)
		if head, _, err := e.Walk(ctx, c); err != nil || !head {
			t.Fatalf("reader %d: Walk = %v, %v; want it holding beside the readers below", i, head, err)
		}
	}
	e, sess := r.engine(queue.NoBug)
	c := r.claim(e, sess, "last", shared)
	r.store.gets, r.store.sessions, r.store.runs = 0, 0, 0
	if head, _, err := e.Walk(ctx, c); err != nil || !head {
		t.Fatalf("Walk = %v, %v; want it holding beside 20 live readers", head, err)
	}
	if r.store.runs != 1 || r.store.gets != 0 || r.store.sessions != 0 {
		t.Errorf("the walk past 20 live readers read %d runs, %d documents by ID, %d sessions; want 1 run and nothing else", r.store.runs, r.store.gets, r.store.sessions)
	}
}

// TestRunWithoutOwnClaimResets: a walk whose run of the queue does not
// find the walker's own claim (the store was restored to a backup taken
// before the insert) gives the claim up (ErrReset) instead of holding on
// what the run shows below it. Held, its epoch would be handed out again:
// here another claim takes it in the restored store and holds too.
func TestRunWithoutOwnClaimResets(t *testing.T) {
	held, other, err := restoredUnderWalk(t, queue.NoBug)
	if held || !errors.Is(err, queue.ErrReset) {
		t.Fatalf("Walk of a claim the store lost = %v, %v; want ErrReset (another claim holds its epoch %d)", held, err, other)
	}
}

// TestRestoredUnderWalkCatchesPlantedRunOwnUnchecked is the negative
// control of the test above.
func TestRestoredUnderWalkCatchesPlantedRunOwnUnchecked(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	held, other, err := restoredUnderWalk(t, queue.BugRunOwnUnchecked)
	if !held || err != nil {
		t.Fatalf("with the run's own claim unchecked, Walk = %v, %v: the scenario misses the bug", held, err)
	}
	t.Logf("as planted: two holds of epoch %d", other)
}

// restoredUnderWalk: a holds the key's first epoch and releases it; a
// backup is taken; b claims the next epoch; the backup is restored (b's
// claim is gone, a's release is there); b walks (bug planted in b's
// engine). It returns b's walk, and the epoch a third process c then
// claims and holds in the restored store (b's, if it failed to notice).
func restoredUnderWalk(t *testing.T, bug queue.Bug) (held bool, other uint64, err error) {
	ctx := context.Background()
	r := runRig{t, newReadsStore(false)}
	a, as := r.engine(queue.NoBug)
	b, bs := r.engine(bug)
	c, cs := r.engine(queue.NoBug)
	ca := r.claim(a, as, "a", queue.ExclusiveTerms)
	if head, _, err := a.Walk(ctx, ca); err != nil || !head {
		t.Fatalf("a: Walk = %v, %v", head, err)
	}
	if err := a.End(ctx, ca, true); err != nil {
		t.Fatal(err)
	}
	backup := r.store.Snapshot()
	cb := r.claim(b, bs, "b", queue.ExclusiveTerms)
	r.store.Restore(backup)
	held, _, err = b.Walk(ctx, cb)
	cc := r.claim(c, cs, "c", queue.ExclusiveTerms)
	if head, _, err := c.Walk(ctx, cc); err != nil || !head {
		t.Fatalf("c: Walk = %v, %v", head, err)
	}
	if held && cc.Epoch != cb.Epoch {
		t.Fatalf("c claimed epoch %d, not b's %d: the scenario no longer shows the danger", cc.Epoch, cb.Epoch)
	}
	return held, cc.Epoch, err
}

// TestRunsUnsupportedReadsByID: on a store that answers runs with
// ErrRunsUnsupported (the MongoDB driver on FerretDB), a walk reads by
// ID, as on a store without GetRun, and the engine asks for no run again.
func TestRunsUnsupportedReadsByID(t *testing.T) {
	ctx := context.Background()
	store := newReadsStore(true)
	e, err := queue.New(store, fixedClock{}, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := e.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	shared := queue.Terms{Mode: queue.Shared}
	for i := range 3 {
		c, err := e.Claim(ctx, "k", "reader", sess, shared, false)
		if err != nil {
			t.Fatal(err)
		}
		if head, _, err := e.Walk(ctx, c); err != nil || !head {
			t.Fatalf("reader %d: Walk = %v, %v; want it holding", i, head, err)
		}
	}
	if store.runs != 1 || store.gets == 0 {
		t.Errorf("%d runs asked for and %d reads by ID, want 1 run (refused) and reads by ID", store.runs, store.gets)
	}
}
