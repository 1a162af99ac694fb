package queue_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestRefreshAfterTheStoreTookAnotherSpan: X, with buckets of a minute,
// holds and releases k, and keeps what it knows of k's segment (emptying
// keeps every cache). The store is emptied while nothing is held, and Y,
// with buckets of five minutes, records its span and starts k's segment
// at the same store time, so with the same number as X's. X claims k
// again: it joins the segment it knows, its walk finds Y's release
// below, and it holds. Its refreshes then insert gates named by its own
// span, in the history before the emptying: no gate of the store's span
// ever meets them. Once Y's coverage is over, Z, with the store's span,
// starts a segment and holds: beside X, if X's refreshes kept it
// covered (chain simulation, seed 3770 with the sem4 branch's walk: a
// limit-3 Semaphore's claims held with weights 4). A refresh counts only
// if the protocol document, read after its gates landed, names their
// history and this process's span.
//
// X's walk no longer holds: Y's release records the store's new history,
// and X's claim the one before (TestSegmentKnownBeforeAnEmptyingDoesNotHold).
// The refresh's own check is proven with the walk's planted away
// (TestRefreshAfterTheStoreTookAnotherSpanPlanted).
func TestRefreshAfterTheStoreTookAnotherSpan(t *testing.T) {
	refreshAfterAnotherSpan(t, queue.NoBug)
}

// TestRefreshAfterTheStoreTookAnotherSpanPlanted: with the walk's check of
// the claims' histories planted away (queue.BugClaimHistoryIgnored), X
// holds on the segment it knew, and its refreshes alone must give it up
// before Z holds.
func TestRefreshAfterTheStoreTookAnotherSpanPlanted(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	refreshAfterAnotherSpan(t, queue.BugClaimHistoryIgnored)
}

// refreshAfterAnotherSpan is the story of TestRefreshAfterTheStoreTookAnotherSpan,
// with bug planted in X for its second claim.
func refreshAfterAnotherSpan(t *testing.T, bug queue.Bug) {
	w := newSpanWorld(t)
	ctx, b0, clock, engine, hold := w.ctx, w.b0, w.clock, w.engine, w.hold

	x, sx := w.staleAcrossAnEmptying(time.Minute, 5*time.Minute)

	x.SetBug(bug)
	if bug == queue.NoBug {
		c, err := x.Claim(ctx, "k", "x", sx, queue.ExclusiveTerms, false)
		if err != nil {
			t.Fatalf("x's claim: %v", err)
		}
		if head, _, err := x.Walk(ctx, c); !queue.IsLapsed(err) {
			t.Fatalf("x's walk of epoch %d = %v, %v; want it given up, its segment lapsed", c.Epoch, head, err)
		}
		return
	}
	cx := hold(x, sx, "x")
	var covered time.Time
	for step := 1; step <= 30; step++ {
		clock.set(clock.ServerNow().Latest.Add(time.Minute))
		lapsed, err := x.Refresh(ctx, []string{"k"})
		if slices.Contains(lapsed, "k") {
			t.Logf("X's hold lapsed at its refresh %d (%v)", step, err)
			break
		}
		covered = x.CoverEnd("k")
		if !clock.ServerNow().Latest.Before(covered) {
			continue
		}
		z, sz := engine(5 * time.Minute)
		if cz, err := z.TryClaim(ctx, "k", "z", sz, queue.ExclusiveTerms); err == nil {
			t.Fatalf("Z holds epoch %d (segment %d) at %v while X holds epoch %d (segment %d), covered by its refreshes until %v",
				cz.Epoch, cz.Seg, clock.ServerNow().Latest.Sub(b0), cx.Epoch, cx.Seg, covered.Sub(b0))
		}
	}
}

// TestWaiterAfterARefusedRefreshPlanted: as in
// TestRefreshAfterTheStoreTookAnotherSpanPlanted (the walk's check of the
// claims' histories planted away, so that X holds again), but X's process
// has a waiter behind each of its holds. The refresh the protocol document refuses
// leaves its gate in the store; the waiter's walk, finding k no longer
// covered, reads the gate that covers k now, finds that one, and must
// not rely on it (a review of the refresh's fix: the waiter held on it a
// bucket at a time, and Z held beside it at 15m10s). Once a document
// read after Agree names another span, the engine relies on no segment.
func TestWaiterAfterARefusedRefreshPlanted(t *testing.T) {
	if !queue.Planted {
		t.Skip("planting a bug in the engine needs -tags dsync_planted")
	}
	w := newSpanWorld(t)
	ctx, b0, clock, engine, hold := w.ctx, w.b0, w.clock, w.engine, w.hold

	x, sx := w.staleAcrossAnEmptying(time.Minute, 5*time.Minute)

	x.SetBug(queue.BugClaimHistoryIgnored)
	cx := hold(x, sx, "x")
	for step := 1; step <= 20; step++ {
		cw, err := x.Claim(ctx, "k", "w", sx, queue.ExclusiveTerms, false)
		if err != nil {
			t.Logf("step %d: the waiter's claim: %v", step, err)
			return
		}
		clock.set(clock.ServerNow().Latest.Add(time.Minute))
		lapsed, rerr := x.Refresh(ctx, []string{"k"})
		_ = x.End(ctx, cx, false) // the hold ends, lost or not
		head, _, err := x.Walk(ctx, cw)
		if err != nil || !head {
			t.Logf("step %d: refresh lapsed %v (%v); the waiter: %v, %v", step, lapsed, rerr, head, err)
			return
		}
		cx = cw
		covered, now := x.CoverEnd("k"), clock.ServerNow().Latest
		z, sz := engine(5 * time.Minute)
		if cz, err := z.TryClaim(ctx, "k", "z", sz, queue.ExclusiveTerms); err == nil {
			t.Fatalf("Z holds epoch %d (segment %d) at %v while X's waiter holds epoch %d (segment %d), covered until %v",
				cz.Epoch, cz.Seg, now.Sub(b0), cx.Epoch, cx.Seg, covered.Sub(b0))
		}
	}
}

// TestLostSpanWritesNothing: X, with buckets of a minute, agrees; the
// store is emptied and Y records buckets of five minutes; X's next start
// finds it (ErrSpan), and X relies on no segment from then on. The store
// is emptied again: X's claims must still be refused, and write no
// protocol document (a review: X's start wrote its own span back, its
// claims went round as busy with nobody holding, and Y's were refused).
func TestLostSpanWritesNothing(t *testing.T) {
	w := newSpanWorld(t)
	ctx, store, engine := w.ctx, w.store, w.engine
	x, sx := engine(time.Minute)
	store.Reset()
	engine(5 * time.Minute)
	if _, err := x.Claim(ctx, "k", "x", sx, queue.ExclusiveTerms, false); !errors.Is(err, queue.ErrSpan) {
		t.Fatalf("X's claim in a store of another span: %v; want ErrSpan", err)
	}
	store.Reset()
	for i := range 3 {
		if _, err := x.Claim(ctx, "k", "x", sx, queue.ExclusiveTerms, false); !errors.Is(err, queue.ErrSpan) {
			t.Fatalf("X's claim %d after the store was emptied again: %v; want ErrSpan", i, err)
		}
	}
	if d, found, err := store.Get(ctx, queue.ProtocolID); err != nil || found {
		t.Fatalf("protocol document after X's claims: %+v, %v, %v; want none", d, found, err)
	}
}
