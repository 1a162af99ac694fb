package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestStartWalkedAfterAnEmptyingDoesNotHold proves ensureCover's
// comparison of the key's history with the claim's (cover.go): it alone
// keeps X's first claim from holding. X starts k's segment S: the start's
// claim, x1, holds on its insert, with nothing to read (its walk only
// ensures its coverage). Before x1's walk, the store is emptied; X's next
// claim, x2, made on what X knows of S, finds its epoch below missing and
// is given up (ErrReset: X forgets what it knew); x3 starts k again, in
// the store's new history and the same quantum of store time, so its
// segment has S's number, and holds. Now x1's walk: X knows a segment S,
// covered, but learnt in the new history, not in x1's. Without the
// comparison x1 holds beside x3 (checked by making it always "same").
func TestStartWalkedAfterAnEmptyingDoesNotHold(t *testing.T) {
	w := newSpanWorld(t)
	x, sx := w.engine(time.Minute)
	c1, err := x.Claim(w.ctx, "k", "x1", sx, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatalf("x1's claim: %v", err)
	}
	if c1.Epoch != c1.Seg {
		t.Fatalf("x1 claimed epoch %d of segment %d: the test needs it to start the segment", c1.Epoch, c1.Seg)
	}

	w.store.Reset() // x1 does not hold yet

	c2, err := x.Claim(w.ctx, "k", "x2", sx, queue.ExclusiveTerms, false)
	if err != nil {
		t.Fatalf("x2's claim: %v", err)
	}
	if head, _, err := x.Walk(w.ctx, c2); !errors.Is(err, queue.ErrReset) {
		t.Fatalf("x2's walk of epoch %d = %v, %v; want ErrReset (its epoch below is missing)", c2.Epoch, head, err)
	}
	c3 := w.hold(x, sx, "x3")
	if c3.Seg != c1.Seg || c3.History == c1.History {
		t.Fatalf("x3 holds in segment %d of history %q, x1 claimed in %d of %q: the test no longer makes them meet",
			c3.Seg, c3.History, c1.Seg, c1.History)
	}

	head, _, err := x.Walk(w.ctx, c1)
	if head {
		t.Fatalf("x1 (epoch %d, segment %d) holds beside x3 (epoch %d, segment %d) on coverage learnt in another history",
			c1.Epoch, c1.Seg, c3.Epoch, c3.Seg)
	}
	if !queue.IsLapsed(err) {
		t.Fatalf("x1's walk: %v; want it given up, its segment lapsed", err)
	}
}
