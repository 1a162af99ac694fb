package queue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// readCountStore counts the reads an engine sends (by ID, of sessions,
// and of runs).
type readCountStore struct {
	*memory.Store
	reads atomic.Int64
}

// countReads returns a view of mem that counts its reads; without runs,
// it answers runs as a store that reads none, so that a walk's reads
// count the epochs it goes down.
func countReads(mem *memory.Store, runs bool) *readCountStore {
	s := &readCountStore{}
	s.Store = mem.Intercept(func(_ context.Context, c memory.Call, _ func() error) error {
		switch c.Op {
		case "GetRun":
			if !runs {
				return driver.ErrRunsUnsupported
			}
			s.reads.Add(1)
		case "Get", "GetSession":
			s.reads.Add(1)
		}
		return nil
	})
	return s
}

// tipRig is a process that claims key k again and again through an
// engine of its own, counting its reads, beside grantRig's others.
type tipRig struct {
	grantRig
	store *readCountStore
	e     *queue.Engine
	sess  string
}

func newTipRig(t *testing.T) tipRig { return newTipRigAt(t, fixedClock{}) }

// newTipRigAt is newTipRig with the counting process's engine on clock.
func newTipRigAt(t *testing.T, clock queue.Times) tipRig {
	mem := memory.New()
	cs := countReads(mem, true)
	e, err := queue.New(cs, clock, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := e.OpenSession(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tipRig{grantRig: grantRig{t, mem}, store: cs, e: e, sess: sess}
}

// mine claims k with terms for the counting process, and reports whether
// it holds and how many reads that took (the claim's and its walk's).
func (r tipRig) mine(terms queue.Terms) (c *queue.Claim, holds bool, reads int64) {
	r.t.Helper()
	before := r.store.reads.Load()
	c, err := r.e.Claim(context.Background(), "k", "me", r.sess, terms, false)
	if err != nil {
		r.t.Fatal(err)
	}
	holds = r.holds(r.e, c)
	return c, holds, r.store.reads.Load() - before
}

// A reader that reads again right after its own read unlock holds on its
// insert alone, whatever live readers lie below (the insert carries the
// released claim's shadow: tip.go); a writer above that release still
// walks, and waits for them.
func TestChainedOnOwnSharedRelease(t *testing.T) {
	r := newTipRig(t)
	eo, other := r.claim("other", shared)
	if !r.holds(eo, other) {
		t.Fatal("the first reader does not hold")
	}
	c, holds, _ := r.mine(shared)
	if !holds {
		t.Fatal("a reader above a live reader does not hold")
	}
	for range 3 {
		r.release(r.e, c)
		var reads int64
		c, holds, reads = r.mine(shared)
		if !holds || reads != 0 {
			t.Fatalf("a reader right above its own read unlock: holds %v after %d reads, want true after 0", holds, reads)
		}
		if c.Below {
			t.Fatal("a reader chained above a live reader says every lower claim had ended")
		}
	}
	r.release(r.e, c)
	w, holds, _ := r.mine(excl)
	if holds {
		t.Fatal("a writer right above its own read unlock holds beside a live reader")
	}
	r.release(eo, other)
	if !r.holds(r.e, w) {
		t.Fatal("the writer does not hold once the reader below it ended")
	}
}

// A weighted claim right above its own process's weighted release holds
// on its insert alone when the weight that release's claim passed and
// its own fit the limit (3); otherwise, or once another claim lies in
// between, it walks.
func TestChainedOnOwnWeightedRelease(t *testing.T) {
	r := newTipRig(t)
	eo, other := r.claim("other", weighted(2))
	if !r.holds(eo, other) {
		t.Fatal("the first claim does not hold")
	}
	c, holds, _ := r.mine(weighted(1))
	if !holds {
		t.Fatal("weights 2 and 1 under limit 3: the second claim does not hold")
	}
	r.release(r.e, c)
	c, holds, reads := r.mine(weighted(1))
	if !holds || reads != 0 {
		t.Fatalf("a claim right above its own weighted release: holds %v after %d reads, want true after 0", holds, reads)
	}
	r.release(r.e, c)
	big, holds, _ := r.mine(weighted(2))
	if holds {
		t.Fatal("weight 2 above its own release, with weight 2 live below: holds over the limit 3")
	}
	if err := r.e.End(context.Background(), big, false); err != nil {
		t.Fatal(err)
	}
	c, holds, _ = r.mine(weighted(1)) // above a withdrawal: it walks
	if !holds {
		t.Fatal("weights 2 and 1 under limit 3: the claim does not hold")
	}
	r.release(r.e, c)
	e3, third := r.claim("third", weighted(1))
	if !r.holds(e3, third) {
		t.Fatal("weights 2 and 1 under limit 3: the third claim does not hold")
	}
	c, holds, _ = r.mine(weighted(1))
	if holds {
		t.Fatal("weights 2, 1 and 1 live under limit 3: a claim holds, chained past the claim in between")
	}
	r.release(e3, third)
	if !r.holds(r.e, c) {
		t.Fatal("the claim does not hold once the claim in between ended")
	}
}

// A weighted claim chained on its own process's release holds with every
// lower claim ended (Below, so its release is Clear and raises the key's
// floor) when the live claims that release's walk passed were all ended
// by the same process since, as a walk would have found: otherwise a
// process whose holds mostly chain (goroutines of one Client cycling a
// semaphore) almost never makes a Clear release, and walks read down to
// the segment's first epoch (apisim's TestConcurrentReleasesPrune took
// over 5 minutes, not 1.5).
// A claim of another process left live below is never counted ended.
func TestChainedOnOwnWeightedReleaseSeesOwnEnds(t *testing.T) {
	r := newTipRig(t)
	a, holds, _ := r.mine(weighted(1))
	if !holds || !a.Below {
		t.Fatalf("the first claim: holds %v, Below %v; want both", holds, a.Below)
	}
	b, holds, _ := r.mine(weighted(1))
	if !holds || b.Below {
		t.Fatalf("a claim above a live one: holds %v, Below %v; want true, false", holds, b.Below)
	}
	r.release(r.e, a)
	r.release(r.e, b)
	c, holds, reads := r.mine(weighted(1))
	if !holds || reads != 0 {
		t.Fatalf("a claim right above its own weighted release: holds %v after %d reads, want true after 0", holds, reads)
	}
	if !c.Below {
		t.Fatal("a chained claim whose process ended every claim live below: Below is false")
	}
	r.release(r.e, c)
	eo, other := r.claim("other", weighted(1))
	if !r.holds(eo, other) {
		t.Fatal("the other process's claim does not hold")
	}
	d, holds, _ := r.mine(weighted(1))
	if !holds || d.Below {
		t.Fatalf("a claim above another process's live one: holds %v, Below %v; want true, false", holds, d.Below)
	}
	r.release(r.e, d)
	f, holds, reads := r.mine(weighted(1))
	if !holds || reads != 0 || f.Below {
		t.Fatalf("chained above another process's live claim: holds %v after %d reads, Below %v; want true after 0, false", holds, reads, f.Below)
	}
	r.release(r.e, f)
}

// A walk stops at a weighted release of its own process's whose claim's
// walk passed only claims that process has ended since, as at a Clear
// release: every claim up to it has ended. Here this process's holds
// always overlap (two live, limit 3), so none of its releases is Clear
// but the first; a claim above another process's reads that claim and
// the newest of those releases, not the whole history down to the first.
func TestWalkStopsAtOwnReleaseWithEndsBelow(t *testing.T) {
	mem := memory.New()
	cs := countReads(mem, false)
	e, err := queue.New(cs, fixedClock{}, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := e.OpenSession(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r := tipRig{grantRig: grantRig{t, mem}, store: cs, e: e, sess: sess}
	var live []*queue.Claim
	for i := range 20 {
		c, holds, _ := r.mine(weighted(1))
		if !holds {
			t.Fatalf("claim %d: two live weights of 1 under the limit 3, and it does not hold", i)
		}
		if live = append(live, c); len(live) > 2 {
			r.release(r.e, live[0])
			live = live[1:]
		}
	}
	for _, c := range live {
		r.release(r.e, c)
	}
	eo, other := r.claim("other", weighted(1))
	if !r.holds(eo, other) {
		t.Fatal("the other process's claim does not hold")
	}
	c, holds, reads := r.mine(weighted(1))
	if !holds {
		t.Fatal("weights 1 and 1 under the limit 3: the claim does not hold")
	}
	if reads > 8 {
		t.Fatalf("a walk above its own process's releases read %d documents, want at most 8 (the claim above them, the newest release, and the checks)", reads)
	}
	r.release(r.e, c)
}

// A process whose weighted holds keep chaining learns, by reading its end
// marker now and then (recheckLive), that another process's claim its
// walk passed live has ended: its chained holds then hold Below again
// (their releases are Clear, its floor rises), with no walk.
func TestChainedLearnsOthersEnd(t *testing.T) {
	clock := &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newTipRigAt(t, clock)
	eo, other := r.claim("other", weighted(1))
	if !r.holds(eo, other) {
		t.Fatal("the other process's claim does not hold")
	}
	a, holds, _ := r.mine(weighted(1))
	if !holds || a.Below {
		t.Fatalf("a claim above another process's live one: holds %v, Below %v; want true, false", holds, a.Below)
	}
	r.release(r.e, a)
	r.release(eo, other)
	below := 0
	var reads int64
	const cycles = 200
	for range cycles {
		clock.now += 10 * time.Millisecond
		c, holds, n := r.mine(weighted(1))
		if !holds {
			t.Fatal("a chained claim does not hold")
		}
		reads += n
		if c.Below {
			below++
		}
		r.release(r.e, c)
	}
	if below == 0 {
		t.Fatalf("%d cycles after the other process's release: no chained hold held Below", cycles)
	}
	if reads > cycles/10 {
		t.Fatalf("%d cycles read %d times: want the markers read at most once a second", cycles, reads)
	}
	t.Logf("%d cycles: %d held Below, %d reads", cycles, below, reads)
}

// While other processes' claims its walk passed stay live, a process whose
// weighted holds keep chaining reads one end marker a look, not one per
// such claim: a claim still live keeps the chained holds from holding
// Below whatever the others' markers say, so the look stops at it.
func TestChainedRecheckStopsAtALiveClaim(t *testing.T) {
	clock := &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newTipRigAt(t, clock)
	wide := queue.Terms{Mode: queue.Weighted, Weight: 1, Limit: 16}
	const others = 8
	for i := range others {
		eo, c := r.claim(fmt.Sprintf("other%d", i), wide)
		if !r.holds(eo, c) {
			t.Fatalf("the other process %d's claim does not hold", i)
		}
	}
	a, holds, _ := r.mine(wide)
	if !holds || a.Below {
		t.Fatalf("a claim above %d live claims of other processes: holds %v, Below %v; want true, false", others, holds, a.Below)
	}
	r.release(r.e, a)
	var reads int64
	const cycles = 300 // 3 s of the engine's time: three looks
	for range cycles {
		clock.now += 10 * time.Millisecond
		c, holds, n := r.mine(wide)
		if !holds || c.Below {
			t.Fatalf("a chained claim above live claims: holds %v, Below %v; want true, false", holds, c.Below)
		}
		reads += n
		r.release(r.e, c)
	}
	if reads > 4 {
		t.Fatalf("%d chained cycles over 3 s with %d other claims live read %d times: want about one read a second", cycles, others, reads)
	}
	t.Logf("%d cycles, %d other claims live: %d reads", cycles, others, reads)
}

// TestChainedRecheckCatchesPlantedMissingEnds is the negative control of
// the test above: a recheck that takes a claim whose end marker it did
// not find for ended lets a chained hold above another process's live
// claim hold Below (its release would then be Clear, and end walks above
// that live claim: two holds over the limit, a floor past a live claim).
func TestChainedRecheckCatchesPlantedMissingEnds(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	clock := &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newTipRigAt(t, clock)
	r.e.SetBug(queue.BugRecheckMissingEnds)
	eo, other := r.claim("other", weighted(1))
	if !r.holds(eo, other) {
		t.Fatal("the other process's claim does not hold")
	}
	a, holds, _ := r.mine(weighted(1))
	if !holds || a.Below {
		t.Fatalf("a claim above another process's live one: holds %v, Below %v; want true, false", holds, a.Below)
	}
	r.release(r.e, a)
	const cycles = 300 // 3 s of the engine's time: three looks
	for i := range cycles {
		clock.now += 10 * time.Millisecond
		c, holds, _ := r.mine(weighted(1))
		if !holds {
			t.Fatal("a chained claim does not hold")
		}
		if c.Below {
			t.Logf("as planted: cycle %d held Below above the other process's live claim", i)
			return
		}
		r.release(r.e, c)
	}
	t.Fatalf("%d chained cycles with the bug planted: none held Below, the scenario misses it", cycles)
}
