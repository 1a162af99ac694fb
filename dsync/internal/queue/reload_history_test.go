package queue_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// onRead is a store that runs a hook, once, before the first read after
// it is armed (of a claim, with claims): what other calls of the same
// engine do while one waits for its read.
type onRead struct {
	*memory.Store
	claims bool
	hook   func()
}

func (s *onRead) Get(ctx context.Context, id string) (queue.Doc, bool, error) {
	if f := s.hook; f != nil && (!s.claims || isClaimID(id)) {
		s.hook = nil
		f()
	}
	return s.Store.Get(ctx, id)
}

// isClaimID reports whether id is a claim's (driver.ClaimID: key@epoch).
func isClaimID(id string) bool {
	i := strings.LastIndexByte(id, '@')
	if i < 0 || i == len(id)-1 {
		return false
	}
	_, err := strconv.ParseUint(id[i+1:], 10, 64)
	return err == nil
}

// TestTryReloadsAKeyLearntInAnotherHistory proves the Claim run's reload
// when the key's knowledge is of another history than the run's
// (claimrun.go, run: q.history != ks.history): X holds k (x1, segment S,
// the store's history before an emptying). X's try x2 loads what X knows
// of k and reads the key's top; while that read is on its way, the store
// is emptied, X's claim x2b is given up (ErrReset: X forgets what it
// knew), and x3 starts k again in the new history, in the same quantum of
// store time (so its segment has S's number), holds and releases. The try
// must load the key's knowledge again, and hold above x3's release.
// Without the reload's comparison (checked by making it always "same"),
// every round finds the run's history unlike the key's and goes round
// again: the try reports a free key busy.
func TestTryReloadsAKeyLearntInAnotherHistory(t *testing.T) {
	w := newSpanWorld(t)
	link := &onRead{Store: w.store}
	x, sx := w.engineWith(link, w.clock, time.Minute)
	c1 := w.hold(x, sx, "x1")

	link.hook = w.emptyAndRestartK(x, sx, c1, "x1")
	c, err := x.TryClaim(w.ctx, "k", "x2", sx, queue.ExclusiveTerms)
	if link.hook != nil {
		t.Fatal("the try read nothing: the test no longer empties the store during its run")
	}
	if err != nil {
		t.Fatalf("x2's try: %v; want it holding above x3's release", err)
	}
	if head, _, err := x.Walk(w.ctx, c); err != nil || !head {
		t.Fatalf("x2's walk of epoch %d = %v, %v; want it holding", c.Epoch, head, err)
	}
}

// TestClaimInsertRecordsTheKeysHistory proves the Claim run's last
// comparison before its insert (claimrun.go, round: ks.history !=
// q.history after findBase): X's claim x2 joins k's segment S, which Y
// started and holds, and loses S's first epoch to Y; its next round reads
// the key's top, and while that read is on its way the store is emptied,
// X's claim x2b is given up (ErrReset: X forgets what it knew), and x3
// starts k again in the new history, in the same quantum of store time
// (so its segment has S's number), holds and releases. x2's round then
// finds the key's knowledge of another history than its own: x2 must
// load it again (the run's first comparison, on its next round), and
// hold above x3's release. Without the
// comparison (checked by making it always "same"), x2 is inserted
// recording the history before the emptying, and its walk gives it up
// (the gate that covers the segment records another history: freshFloor):
// a claim of a free key answered as lapsed.
func TestClaimInsertRecordsTheKeysHistory(t *testing.T) {
	w := newSpanWorld(t)
	link := &onRead{Store: w.store}
	x, sx := w.engineWith(link, w.clock, time.Minute)
	y, sy := w.engine(time.Minute)
	cy := w.hold(y, sy, "y")

	link.claims = true
	link.hook = w.emptyAndRestartK(x, sx, cy, "Y")
	c, err := x.Claim(w.ctx, "k", "x2", sx, queue.ExclusiveTerms, false)
	if link.hook != nil {
		t.Fatal("x2's claim read no claim: the test no longer empties the store during its run")
	}
	if err != nil {
		t.Fatalf("x2's claim: %v", err)
	}
	if head, _, err := x.Walk(w.ctx, c); err != nil || !head {
		t.Fatalf("x2's walk of epoch %d = %v, %v; want it holding above x3's release", c.Epoch, head, err)
	}
}

// emptyAndRestartK returns the hook both stories run during X's read: the
// store is emptied, X's claim x2b is given up (ErrReset: X forgets what
// it knew), and x3 starts k again in the new history, in the same
// quantum of store time as before's claim (by whom) held, so that its
// segment has that one's number; it holds and releases.
func (w *spanWorld) emptyAndRestartK(x *queue.Engine, sx string, before *queue.Claim, by string) func() {
	t := w.t
	return func() {
		w.store.Reset()
		c2, err := x.Claim(w.ctx, "k", "x2b", sx, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatalf("x2b's claim: %v", err)
		}
		if head, _, err := x.Walk(w.ctx, c2); !errors.Is(err, queue.ErrReset) {
			t.Fatalf("x2b's walk of epoch %d = %v, %v; want ErrReset (its epoch below is missing)", c2.Epoch, head, err)
		}
		c3 := w.hold(x, sx, "x3")
		if c3.Seg != before.Seg || c3.History == before.History {
			t.Fatalf("x3 holds in segment %d of history %q, %s held in %d of %q: the test no longer makes them meet",
				c3.Seg, c3.History, by, before.Seg, before.History)
		}
		if err := x.End(w.ctx, c3, true); err != nil {
			t.Fatal(err)
		}
	}
}
