package queue_test

import (
	"context"
	"testing"
	"time"
)

// TestDropBelowFloorKeepsFloorClaim: dropBelowFloor (walkfloor.go) drops the
// passed claims below the floor, never the floor's own claim, which may
// still hold (it held with every lower claim ended: that is what
// made it the floor). With limit 3: Q's r (1), R's y (1, its walk slow),
// P's d (1, held and released), P's c (3) stops at d counting y and r;
// r ends, y holds Below and R's gates record the floor at y. c must not
// hold while y does. (Dropping at the floor too, `>` for `>=` in
// dropBelowFloor, passes every other test and both simulations.)
func TestDropBelowFloorKeepsFloorClaim(t *testing.T) {
	ctx := context.Background()
	s := newOwnStopScene(t)
	y, eR, eP := s.y, s.eR, s.eP
	walk, end, renew := s.walk, s.end, s.renew
	c := s.waitWhole()
	if !walk(eR, y) || !y.Below {
		t.Fatal("y does not hold Below")
	}
	for i := range 60 {
		s.clock.now += 20 * time.Second
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
		s.clock.now += 20 * time.Second
		renew()
	}
	t.Fatal("c never holds once y ended")
}
