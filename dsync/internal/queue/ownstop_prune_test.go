package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestOwnStopPassedClaimPrunedWaiterHolds: a weighted walk that stops at
// its own release counts the claims that release's hold left live below
// it as passed. While the walker waits (a waiter for several units is
// not woken by an end that cannot make room alone), one of them (r)
// ends, a claim between it and the walker (y) holds with every lower
// claim ended, which raises the floor above r, and y's release prunes r
// with its marker. The walker then finds no marker of r, and r's owner
// lives on: it must drop r as below the floor of the gate that covers it
// (walkfloor.go: dropBelowFloor), not count it live for good. With limit 3:
// Q's r (1), R's y (1, its walk slow), P's d (1, held and released),
// then P's c (3).
func TestOwnStopPassedClaimPrunedWaiterHolds(t *testing.T) {
	ctx := context.Background()
	s := newOwnStopScene(t)
	r, y, eR, eP := s.r, s.y, s.eR, s.eP
	walk, end, renew := s.walk, s.end, s.renew
	c := s.waitWhole() // r ended: one unit of the two c lacks
	if !walk(eR, y) {
		t.Fatal("y does not hold")
	}
	if !y.Below {
		t.Fatal("y holds, but not with every lower claim ended: its gates record no floor at y")
	}
	// y holds for a while: R refreshes its gates, everyone renews.
	for range 60 {
		s.clock.now += 20 * time.Second
		renew()
		if _, err := eR.Refresh(ctx, []string{"k"}); err != nil {
			t.Fatal(err)
		}
	}
	end(eR, y) // prunes below y's floor: r and its marker
	if _, found, err := s.mem.Get(ctx, queue.EndID("k", r.Epoch, r.Nonce)); err != nil || found {
		t.Fatalf("r's marker is still stored (found %v, %v): the scenario needs it pruned", found, err)
	}
	// Nothing below c is live now; Q lives on (its session renewed).
	for range 5 {
		if walk(eP, c) {
			return
		}
		s.clock.now += 20 * time.Second
		renew()
	}
	t.Fatal("c never holds, though every claim below it has ended (r's owner lives on)")
}
