package chain_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/chain"
)

// TestDropBelowFloorKeepsFloorClaim: dropBelowFloor (full.go) drops the
// passed claims below the floor, never the floor's own claim, which may
// still hold (it held with every lower claim ended: that is what
// made it the floor). With limit 3: Q's r (1), R's y (1, its walk slow),
// P's d (1, held and released), P's c (3) stops at d counting y and r;
// r ends, y holds Below and R's gates record the floor at y. c must not
// hold while y does. (Dropping at the floor too, `>` for `>=` in
// dropBelowFloor, passes every other test and both simulations.)
func TestDropBelowFloorKeepsFloorClaim(t *testing.T) {
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
	r := claim(eQ, sQ, 1)
	if !walk(eQ, r) {
		t.Fatal("r does not hold")
	}
	y := claim(eR, sR, 1)
	d := claim(eP, sP, 1)
	if !walk(eP, d) {
		t.Fatal("d does not hold")
	}
	end(eP, d)
	c := claim(eP, sP, 3)
	if walk(eP, c) {
		t.Fatal("c holds beside y and r")
	}
	end(eQ, r)
	if !walk(eR, y) || !y.Below {
		t.Fatal("y does not hold Below")
	}
	for i := range 60 {
		clock.now += 20 * time.Second
		renew()
		if _, err := eR.Refresh(ctx, []string{"k"}); err != nil {
			t.Fatal(err)
		}
		if i < 45 {
			// c does not look (a waiter for 2 units, woken by neither
			// end alone) while R's gates come to record the floor at
			// y and P's coverage lapses: its next look reads the gate
			// (floor y) before r's marker, and drops r unread.
			continue
		}
		if walk(eP, c) {
			t.Fatalf("after %v: c holds 3 units while y holds 1 (limit 3)", time.Duration(i+1)*20*time.Second)
		}
	}
	end(eR, y)
	for range 5 {
		if walk(eP, c) {
			return
		}
		clock.now += 20 * time.Second
		renew()
	}
	t.Fatal("c never holds once y ended")
}
