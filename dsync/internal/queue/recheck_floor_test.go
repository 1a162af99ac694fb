package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestChainedHoldsEndPrunedClaimBelowFloor: a claim that this process's
// weighted release left live below it (r) ends and is pruned with its
// marker while the process's holds keep chaining on that release. Its
// chained holds must take r for ended as below the floor they know
// (tip.go: recheckLive), not count it live for good because no marker is
// found: else no chained hold ever holds Below again, its releases are
// never Clear, the floor stops rising, nothing of the key is pruned any
// more and another process's walk reads the whole history.
func TestChainedHoldsEndPrunedClaimBelowFloor(t *testing.T) {
	ctx := context.Background()
	s := newOwnStopScene(t)
	clock, mem := s.clock, s.mem
	r, y := s.r, s.y
	eQ, eR, eP, sP := s.eQ, s.eR, s.eP, s.sP
	claim, walk, end, renew := s.claim, s.walk, s.end, s.renew
	cycle := func() bool {
		c := claim(eP, sP, 1)
		if !walk(eP, c) {
			t.Fatal("P's claim does not hold")
		}
		end(eP, c)
		return c.Below
	}
	// P cycles one unit, a second apart, all along: its holds queue.
	tick := func(n int, refreshR bool) (below int) {
		for i := range n {
			clock.now += time.Second
			if i%20 == 0 {
				renew()
			}
			if refreshR { // R's refresh comes first at each bucket
				if _, err := eR.Refresh(ctx, []string{"k"}); err != nil {
					t.Fatal(err)
				}
			}
			if cycle() {
				below++
			}
		}
		return below
	}
	tick(5, false)
	end(eQ, r) // P's rechecks stop at y (live), so it never reads r's marker
	if !walk(eR, y) || !y.Below {
		t.Fatal("y does not hold Below")
	}
	tick(20*60, true) // y holds 20 minutes
	end(eR, y)        // prunes r and its marker
	if _, found, _ := mem.Get(ctx, queue.EndID("k", r.Epoch, r.Nonce)); found {
		t.Fatal("r's marker is still stored")
	}
	before := mem.Len()
	const cycles = 30 * 60
	below := tick(cycles, false) // P alone on the key for 30 minutes
	t.Logf("%d cycles of P alone: %d held Below; documents %d -> %d", cycles, below, before, mem.Len())
	// Another process's first claim walks P's releases, none Clear.
	cs := countReads(mem, false)
	eX, err := queue.New(cs, clock, queue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sX, _, err := eX.OpenSession(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	x := claim(eX, sX, 1)
	n0 := cs.reads.Load()
	if !walk(eX, x) {
		t.Fatal("x does not hold")
	}
	t.Logf("another process's walk: %d reads", cs.reads.Load()-n0)
	if after := mem.Len(); after >= before {
		t.Errorf("%d cycles of P alone on the key: documents %d -> %d, nothing pruned", cycles, before, after)
	}
	if below == 0 {
		t.Fatalf("%d cycles of P alone on the key, every other claim ended: none held Below (r, pruned with its marker, counted live for good); documents %d -> %d", cycles, before, mem.Len())
	}
}
