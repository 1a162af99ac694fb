package queue

import (
	"context"
	"errors"
	"fmt"
)

// What a walk checks of its claim's segment before it goes below an
// epoch, waits or holds: the floor of the gate that covers it (floor.go),
// its coverage (segment.go), and the history of the store its owner
// learnt it in (history.go).

// refloor reads the gate that covers c again before c waits for the live
// claims its walk passed below an ended or passed one (liveBelow does the
// same where a walk stops): a prune may have deleted the marker of one of
// them after this walk's floor check, and full drops the claims below the
// floor it reads. Only the walk that found them reads it.
func (e *Engine) refloor(ctx context.Context, c *Claim) error {
	if e.has(BugNoFloorProof) {
		return nil
	}
	for _, p := range c.passed {
		if p.walk == c.walks && p.d.Epoch < c.Epoch-1 {
			_, err := e.freshFloor(ctx, c)
			return err
		}
	}
	return nil
}

// underFloor reports whether epoch lies below the floor of the gate that
// covers c's segment now: if so, the walk ends there (belowFloor).
func (e *Engine) underFloor(ctx context.Context, c *Claim, epoch uint64) (below bool, err error) {
	f, err := e.coverFloor(ctx, c)
	if err != nil {
		return false, err
	}
	if epoch < f.Epoch && !e.has(BugNoFloorProof) {
		// Below the key's floor every epoch has ended.
		return true, e.belowFloor(ctx, c, f)
	}
	return false, nil
}

// missingBelow decides what a missing claim of epoch below c means: a
// nil error goes on with the walk (the claim was pruned below a floor),
// and an error ends it (the store lost the key's history).
func (e *Engine) missingBelow(ctx context.Context, c *Claim, epoch uint64) error {
	// A missing claim: pruning deletes only below a floor, and the
	// floor this process knows while it relies on the segment is
	// at least that of any gate a prune relied on (floor.go).
	if e.has(BugTrustCache) {
		c.clear, c.strong = true, true
		return nil
	}
	if f := e.keys.floorOf(c.Key, c.Seg); epoch < f.Epoch {
		// The floor rose meanwhile: below it, everything has ended.
		return e.belowFloor(ctx, c, f)
	}
	// A walk that passed live claims without reading the gate again
	// (liveBelow) may have gone below a floor a prune relied on since:
	// the gate that covers the key now says.
	if f, ok, err := e.gateFloor(ctx, c); err != nil {
		return err
	} else if ok && epoch < f.Epoch {
		return e.belowFloor(ctx, c, f)
	}
	// Otherwise the store lost the key's history.
	err := e.voidClaim(ctx, c, fmt.Sprintf("epoch %d is missing", epoch))
	e.keys.noteGap(c.Key, epoch)
	return err
}

// coverFloor returns the floor of the gate that covers c's segment now.
// A process that no longer knows such a gate (a waiter's coverage comes
// from its claim's insert, and only holders insert the next gates) reads
// the gates around the store's time; if none covers c's segment, c is
// given up (its segment lapsed: claim again).
func (e *Engine) coverFloor(ctx context.Context, c *Claim) (Floor, error) {
	ks := e.keys.snapshot(c.Key)
	if ks.seg == c.Seg && e.segments.sameKnown(ks.history, c.History) && e.segments.covered(ks, e.clock.ServerNow().Latest) || e.has(BugNoCoverage) {
		return e.ownFloorCheck(ctx, c, ks.floor)
	}
	return e.freshFloor(ctx, c)
}

// freshFloor reads the gate that covers c's segment now, and returns its
// floor (c is given up if no gate covers its segment, or the one that
// does records another history than c: c's owner then learnt the
// segment in another history, or the gate landed late in this one, and
// either way c waits for no gate it cannot rely on).
func (e *Engine) freshFloor(ctx context.Context, c *Claim) (Floor, error) {
	g, ok, err := e.segments.liveSegment(ctx, c.Key)
	if err != nil {
		return Floor{}, err
	}
	if !ok || g.Seg != c.Seg || !e.segments.sameKnown(c.History, g.Nonce) {
		// (A gate of another history than c's: a refresh refused, or a
		// stray; or the store was emptied since, and c was made on
		// knowledge that is stale.)
		e.abandon(context.WithoutCancel(ctx), c)
		e.keys.dropCover(c.Key, c.Seg)
		return Floor{}, fmt.Errorf("%w: %q: no gate of this history covers segment %d", errLapsed, c.Key, c.Seg)
	}
	e.keys.learnGate(c.Key, g)
	return e.ownFloorCheck(ctx, c, e.keys.floorOf(c.Key, c.Seg))
}

// ownFloorCheck returns f, unless c itself lies below it (or at it, with
// another nonce): c's insert landed in a hole pruning left (no claim that
// has not ended lies below a floor), and c is given up.
func (e *Engine) ownFloorCheck(ctx context.Context, c *Claim, f Floor) (Floor, error) {
	if c.Epoch > f.Epoch || c.Epoch == f.Epoch && c.Nonce == f.Nonce || e.has(BugNoFloorProof) {
		return f, nil
	}
	e.abandon(context.WithoutCancel(ctx), c)
	return Floor{}, fmt.Errorf("%w: %q: epoch %d lies below the floor %d", errLapsed, c.Key, c.Epoch, f.Epoch)
}

// belowFloor ends c's walk at floor f: every epoch below it has ended, if
// the floor counts. A floor that does not count came from a store's
// earlier history: the store lost the key's, and c is given up.
func (e *Engine) belowFloor(ctx context.Context, c *Claim, f Floor) error {
	if _, err := e.countedFloor(ctx, c, f); err != nil {
		return err
	}
	c.read = true
	c.clear, c.strong = true, true
	return nil
}

// countedFloor returns floor f of c's key if it counts (floor.go), or the
// higher floor of the gate that covers c's segment now if that one
// counts: every epoch of the segment below the floor returned has ended.
// A floor that does not count came from a store's earlier history: the
// store lost the key's, and c is given up (ErrReset).
func (e *Engine) countedFloor(ctx context.Context, c *Claim, f Floor) (Floor, error) {
	_, counts, err := e.rd.floorCounts(ctx, c.Key, f)
	if err != nil {
		return Floor{}, err
	}
	if counts || e.has(BugTrustCache) {
		return f, nil
	}
	// A prune that relied on a later gate than the one this process
	// knows may have deleted f's claim (a walk that passed live claims
	// without reading the gate again: liveBelow): the gate that covers
	// the key now may show a higher floor that counts.
	if g, ok, err := e.gateFloor(ctx, c); err != nil {
		return Floor{}, err
	} else if ok && g.Epoch > f.Epoch {
		return e.countedFloor(ctx, c, g)
	}
	err = e.voidClaim(ctx, c, fmt.Sprintf("the floor %d names a claim the store does not hold", f.Epoch))
	e.keys.noteGap(c.Key, f.Epoch)
	return Floor{}, err
}

// gateFloor reads the gate that covers c's segment now, as freshFloor
// does, and returns its floor; ok is false (and nothing is given up or
// learned) if no gate covers the segment (or the one that does records
// another history than c): the caller then judges what it
// found as it would have without the read (a store that lost the key's
// history is a reset, not a lapse).
func (e *Engine) gateFloor(ctx context.Context, c *Claim) (f Floor, ok bool, err error) {
	g, found, err := e.segments.liveSegment(ctx, c.Key)
	if err != nil || !found || g.Seg != c.Seg || !e.segments.sameKnown(c.History, g.Nonce) {
		return Floor{}, false, err
	}
	e.keys.learnGate(c.Key, g)
	return e.keys.floorOf(c.Key, c.Seg), true, nil
}

// ensureCover checks, before c holds, that its segment is covered now
// (refreshing it if its coverage is near its end), by what this process
// learnt of it in the history c records: knowledge of a segment of the
// same number learnt in another history is not c's. A claim whose
// segment lapsed is withdrawn, and errLapsed returned: a process that
// lost coverage never relies on that segment again.
func (e *Engine) ensureCover(ctx context.Context, c *Claim) error {
	ks := e.keys.snapshot(c.Key)
	now := e.clock.ServerNow()
	ours := ks.seg == c.Seg && e.segments.sameKnown(ks.history, c.History)
	if !ours || !e.segments.covered(ks, now.Latest) {
		e.abandon(context.WithoutCancel(ctx), c)
		if ours {
			e.keys.dropCover(c.Key, c.Seg)
		}
		return fmt.Errorf("%w: %q", errLapsed, c.Key)
	}
	if e.segments.bucket(now.Latest)+1 > ks.cover {
		ok, err := e.segments.refreshKey(ctx, c.Key)
		switch {
		case !ok && err != nil:
			// Over, and why (the store's span is another since: the
			// next claim is refused with it).
			e.abandon(context.WithoutCancel(ctx), c)
			return fmt.Errorf("%w: %q: %w", errLapsed, c.Key, err)
		case !ok:
			e.abandon(context.WithoutCancel(ctx), c)
			return fmt.Errorf("%w: %q", errLapsed, c.Key)
		case err != nil:
			return err // unknown outcome: nothing learnt, nothing lost
		}
	}
	return nil
}

// proveGate reads the gate that covers c's segment: it must name it, and
// have been sent in the store's history now (history.go), which must be
// the one c records (c's owner learnt the segment in it). A claim that
// holds with nothing below it in its segment relies on that gate being in
// the store now, not only once.
func (e *Engine) proveGate(ctx context.Context, c *Claim) error {
	ks := e.keys.snapshot(c.Key)
	if ks.seg == c.Seg && e.segments.sameKnown(ks.history, c.History) {
		g, found, err := e.store.Get(ctx, GateID(c.Key, ks.cover))
		if err != nil {
			return err
		}
		if found && g.Kind == KindGate && g.Seg == c.Seg && e.segments.sameKnown(c.History, g.Nonce) {
			// A gate held back across an emptying may name the segment in
			// the next history: it counts only if the store is in its own.
			err := e.segments.gateOfThisHistory(ctx, g)
			if err == nil {
				e.keys.learnGate(c.Key, g)
				return nil
			}
			if !errors.Is(err, errOtherHistory) {
				return err
			}
		}
		e.keys.dropCover(c.Key, c.Seg)
	}
	e.abandon(context.WithoutCancel(ctx), c)
	return fmt.Errorf("%w: %q: no gate of this history of the store names segment %d", errLapsed, c.Key, c.Seg)
}

// claimOfHistory checks claim d of c's segment, which c's walk read: a
// claim recording another history than c (Doc.History) was sent in a
// history of the store other than the one c's owner learnt the segment
// in. Either d is a stray, sent before an emptying and landed after it
// (c's owner knows the store's history: d is a claim like any other,
// and its owner gives it up or its session ends), or c was made on
// knowledge of a segment of the store's history before, which the
// emptying took: the store's segment of that number is another's, and
// coverage this process knows of it is not the store's. The protocol
// document, read once per claim, says which: c is given up (errLapsed)
// unless it names c's history and this process's span.
func (e *Engine) claimOfHistory(ctx context.Context, c *Claim, d Doc) error {
	if c.inHistory || e.segments.sameKnown(c.History, d.History) {
		return nil
	}
	history, err := e.segments.confirmSpan(ctx)
	if err != nil && !errors.Is(err, ErrSpan) {
		return err
	}
	if err == nil && history == c.History {
		// The store is in c's history (and c's claim, read back before
		// c holds, shows it was not emptied since: confirmOwn).
		c.inHistory = true
		return nil
	}
	return e.staleSegment(ctx, c, fmt.Sprintf("epoch %d was sent in another history of the store", d.Epoch))
}

// staleSegment gives c up, made on knowledge of its segment learnt in
// another history of the store than the one it is in: that knowledge is
// dropped, and the key's next claim starts or joins the store's segment.
func (e *Engine) staleSegment(ctx context.Context, c *Claim, why string) error {
	e.keys.dropStale(c.Key, c.Seg, c.History)
	e.abandon(context.WithoutCancel(ctx), c)
	return fmt.Errorf("%w: %q: %s", errLapsed, c.Key, why)
}
