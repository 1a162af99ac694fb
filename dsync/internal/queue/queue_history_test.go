package queue_test

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestQueueLearnsNoGateOfAnotherHistory proves Queue's comparison of the
// key's history with the gate's (head.go, queue): Queue learns only a gate
// of the history the key's segment was learnt in. X holds and releases k
// (segment S); a refresh of X's, with X's estimate of the store's time a
// bucket ahead, sends a gate for a bucket beyond S's coverage, and is held
// back. The store is emptied; Y starts k at the same quantum of store
// time (so its segment has S's number) in the new history, holds and
// releases; X claims k until it holds in Y's segment (its first claim, on
// what it knew before the emptying, is given up), and releases. X's
// refresh lands now: a stray gate of the history before, naming S. X's
// Queue, its estimate a bucket ahead again, finds that gate live. X's
// next claim must hold (above its own release). Without the comparison
// (checked by making it always "same"), Queue learns the stray gate, X's
// knowledge of k records the history before the emptying, and its next
// claim, recording it too, is given up at its walk: a free key answered
// as lapsed.
func TestQueueLearnsNoGateOfAnotherHistory(t *testing.T) {
	w := newSpanWorld(t)
	link := &heldGates{Store: w.store}
	xClock := &aheadClock{testClock: w.clock}
	x, sx := w.engineWith(link, xClock, time.Minute)
	cx := w.hold(x, sx, "x1")
	if err := x.End(w.ctx, cx, true); err != nil {
		t.Fatal(err)
	}
	xClock.setAhead(time.Minute)
	link.mu.Lock()
	link.armed = true
	link.mu.Unlock()
	_, _ = x.Refresh(w.ctx, []string{"k"}) // no reply: its outcome is unknown
	link.mu.Lock()
	link.armed = false
	held := link.held
	link.held = nil
	link.mu.Unlock()
	xClock.setAhead(0)
	if len(held) == 0 {
		t.Fatal("X's refresh sent no gate: the test no longer makes a stray")
	}

	_, cy := w.emptyAndStartK(cx) // nothing is held
	var c2 *queue.Claim
	for try := 0; c2 == nil; try++ {
		if try == 3 {
			t.Fatal("X's claims never hold in Y's segment")
		}
		c, err := x.Claim(w.ctx, "k", "x2", sx, queue.ExclusiveTerms, false)
		if err != nil {
			continue
		}
		if head, _, err := x.Walk(w.ctx, c); err == nil && head {
			c2 = c
		}
	}
	if c2.Seg != cy.Seg || c2.History != cy.History {
		t.Fatalf("x2 holds in segment %d of history %q; Y held in %d of %q", c2.Seg, c2.History, cy.Seg, cy.History)
	}
	if err := x.End(w.ctx, c2, true); err != nil {
		t.Fatal(err)
	}

	for _, g := range held {
		if err := w.store.Insert(w.ctx, g); err != nil {
			t.Fatalf("the stray gate %s: %v", g.ID, err)
		}
	}
	xClock.setAhead(time.Minute)
	if _, err := x.Queue(w.ctx, "k"); err != nil {
		t.Fatalf("X's Queue: %v", err)
	}
	xClock.setAhead(0)

	c3, err := x.Claim(w.ctx, "k", "x3", sx, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatalf("x3's claim: %v", err)
	}
	if head, _, err := x.Walk(w.ctx, c3); err != nil || !head {
		t.Fatalf("x3's walk of epoch %d = %v, %v; want it holding above x2's release", c3.Epoch, head, err)
	}
}
