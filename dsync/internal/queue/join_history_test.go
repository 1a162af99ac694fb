package queue_test

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestJoinAfterAnEmptyingRecordsTheStoresHistory proves learnGate's
// comparison of the key's history with the gate's (segment.go), by which
// a join records the history of the gate it met (join): X holds and
// releases k, and keeps what it knows of k's segment S. The store is
// emptied; Y, of X's span, starts k at the same quantum of store time, so
// its segment has S's number, holds and releases, and keeps it covered
// by its refreshes. Once X's own knowledge of S no longer covers it, X claims k:
// its start meets Y's gates and joins Y's segment, and its claim must
// record the store's history, so that it holds above Y's release. Without the
// comparison (checked by making it always "same"), X's knowledge keeps
// the history before the emptying beside the gate it just learnt, X's
// claim records that one, and its walk gives it up at Y's claim (IsLapsed):
// a claim of a free key answered as lapsed.
func TestJoinAfterAnEmptyingRecordsTheStoresHistory(t *testing.T) {
	w := newSpanWorld(t)
	x, sx := w.engine(time.Minute)
	cx := w.hold(x, sx, "x")
	if err := x.End(w.ctx, cx, true); err != nil {
		t.Fatal(err)
	}
	xCovered := x.CoverEnd("k")

	y, cy := w.emptyAndStartK(cx) // nothing is held
	for !w.clock.ServerNow().Latest.After(xCovered) {
		w.clock.set(w.clock.ServerNow().Latest.Add(20 * time.Second))
		if lapsed, err := y.Refresh(w.ctx, []string{"k"}); len(lapsed) > 0 || err != nil {
			t.Fatalf("Y's refresh: lapsed %v, %v", lapsed, err)
		}
	}

	c, err := x.Claim(w.ctx, "k", "x2", sx, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatalf("x2's claim: %v", err)
	}
	if c.Seg != cy.Seg || c.History != cy.History {
		t.Errorf("x2 claimed in segment %d of history %q; Y held in %d of %q", c.Seg, c.History, cy.Seg, cy.History)
	}
	if head, _, err := x.Walk(w.ctx, c); err != nil || !head {
		t.Fatalf("x2's walk of epoch %d = %v, %v; want it holding above Y's release", c.Epoch, head, err)
	}
}
