package chain_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/chain"
)

// TestOwnStopPassedClaimPrunedWaiterHolds: a weighted walk that stops at
// its own release counts the claims that release's hold left live below
// it as passed. While the walker waits (a waiter for several units is
// not woken by an end that cannot make room alone), one of them (r)
// ends, a claim between it and the walker (y) holds with every lower
// claim ended, which raises the floor above r, and y's release prunes r
// with its marker. The walker then finds no marker of r, and r's owner
// lives on: it must drop r as below the floor of the gate that covers it
// (full.go: dropBelowFloor), not count it live for good. With limit 3:
// Q's r (1), R's y (1, its walk slow), P's d (1, held and released),
// then P's c (3).
func TestOwnStopPassedClaimPrunedWaiterHolds(t *testing.T) {
	ctx := context.Background()
	clock := &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	mem := memory.New()
	newEngine := func() (*chain.Engine, string) {
		e, err := chain.New(mem, clock, chain.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return e, s
	}
	eQ, sQ := newEngine()
	eR, sR := newEngine()
	eP, sP := newEngine()
	claim := func(e *chain.Engine, s string, w int64) *chain.Claim {
		c, err := e.Claim(ctx, "k", "o", s, weighted(w), false)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	walk := func(e *chain.Engine, c *chain.Claim) bool {
		h, _, err := e.Walk(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	end := func(e *chain.Engine, c *chain.Claim) {
		if err := e.End(ctx, c, true); err != nil {
			t.Fatal(err)
		}
	}
	renew := func() {
		for _, x := range []struct {
			e *chain.Engine
			s string
		}{{eQ, sQ}, {eR, sR}, {eP, sP}} {
			if _, _, err := x.e.RenewSession(ctx, x.s, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := claim(eQ, sQ, 1)
	if !walk(eQ, first) {
		t.Fatal("the first claim does not hold")
	}
	end(eQ, first)
	r := claim(eQ, sQ, 1) // Q's unit
	if !walk(eQ, r) {
		t.Fatal("r does not hold")
	}
	y := claim(eR, sR, 1) // R's claim, its walk delayed (a slow process)
	d := claim(eP, sP, 1)
	if !walk(eP, d) {
		t.Fatal("d does not hold: 1+1+1 fit 3")
	}
	end(eP, d)
	c := claim(eP, sP, 3) // P's other goroutine: the whole semaphore
	if walk(eP, c) {
		t.Fatal("c holds beside y and r")
	}
	end(eQ, r) // one unit of the two c lacks
	if !walk(eR, y) {
		t.Fatal("y does not hold")
	}
	if !y.Below {
		t.Fatal("y holds, but not with every lower claim ended: its gates record no floor at y")
	}
	// y holds for a while: R refreshes its gates, everyone renews.
	for range 60 {
		clock.now += 20 * time.Second
		renew()
		if _, err := eR.Refresh(ctx, []string{"k"}); err != nil {
			t.Fatal(err)
		}
	}
	end(eR, y) // prunes below y's floor: r and its marker
	if _, found, err := mem.Get(ctx, chain.EndID("k", r.Epoch, r.Nonce)); err != nil || found {
		t.Fatalf("r's marker is still stored (found %v, %v): the scenario needs it pruned", found, err)
	}
	// Nothing below c is live now; Q lives on (its session renewed).
	for range 5 {
		if walk(eP, c) {
			return
		}
		clock.now += 20 * time.Second
		renew()
	}
	t.Fatal("c never holds, though every claim below it has ended (r's owner lives on)")
}
