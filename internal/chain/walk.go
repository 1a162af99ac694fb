package chain

import (
	"context"
	"fmt"
)

// Walk reports whether c holds by the grant rule (grant.go): for an
// exclusive claim, every lower epoch has ended. If not, it returns the
// live claim c waits for. Walk reads only what it has not learned before;
// a waiter calls it again when the blocker may have ended (an event, its
// session's expiry, or a poll).
//
// A claim holds only on what the store shows after its insert: the
// release its insert carried (see Claim), or what the walk reads — a
// release that ends the walk, the claims in between ended or passed, the
// key's floor (if it counts: floor.go), or the first epoch of its segment
// (never pruned).
// Holding on reads, it first checks that its own claim is still in the
// store: if the store was emptied or restored meanwhile, Walk withdraws
// it and returns ErrReset.
//
// An unended claim whose session has expired in server time is ended by a
// dead marker first, so that a late renewal reviving the session cannot
// make it look alive again to anyone.
func (e *Engine) Walk(ctx context.Context, c *Claim) (head bool, blocker Blocker, err error) {
	if c.ended {
		return false, Blocker{}, fmt.Errorf("%w: %q: epoch %d was ended", errLapsed, c.Key, c.Epoch)
	}
	c.run, c.runSeq, c.runs = nil, 0, 0 // what a run showed holds for the walk that read it
	c.walks++
	if e.takeHead(c) || c.clear && !c.read {
		return e.holdOnInsert(ctx, c)
	}
	first := max(c.Seg, 1)
	for !c.clear && c.checked > first {
		b, wait, err := e.walkDown(ctx, c)
		if err != nil || wait {
			return false, b, err
		}
	}
	return e.holdOnReads(ctx, c, first)
}

// holdOnInsert finds c holding on what its insert proved (Claim), with
// no read since: c holds once its segment's coverage is ensured.
func (e *Engine) holdOnInsert(ctx context.Context, c *Claim) (head bool, blocker Blocker, err error) {
	if err := e.ensureCover(ctx, c); err != nil {
		return false, Blocker{}, err
	}
	c.clear = true
	if c.Below {
		e.learnOwn(c)
	}
	return true, Blocker{}, nil
}

// holdOnReads decides, once nothing below c's checked epoch can keep it
// from holding (clear, or the walk reached first, its segment's first
// epoch), whether c holds: the live claims it passed must leave room for
// it, and what the walk read must be confirmed (the segment's gate, c's
// own claim, its coverage). Otherwise c waits for the lowest of the
// claims it passed.
func (e *Engine) holdOnReads(ctx context.Context, c *Claim, first uint64) (head bool, blocker Blocker, err error) {
	if c.checked <= first {
		c.strong = true // the segment's first epoch: nothing below
	}
	if !e.fits(c.Terms, c.passed) {
		if err := e.refloor(ctx, c); err != nil {
			return false, Blocker{}, err
		}
		if b, full, err := e.full(ctx, c); err != nil || full {
			return false, b, err
		}
	}
	if c.checked <= first && !e.has(BugNoCoverage) {
		// Nothing below c in its segment: only the segment's
		// gates keep another segment from holding. What this
		// process knows of them may be older than the store's
		// history (emptied or restored since): read the gate.
		// A woken weighted waiter whose walk reached its first epoch
		// pays these two reads (the gate, the protocol document) on
		// each hold: they are not merged into the run full reads (the
		// gate is not in the key's range), and are not read before the
		// wait instead, as nothing here argues that a gate proven then
		// still counts after an emptying and restore meanwhile.
		if err := e.proveGate(ctx, c); err != nil {
			return false, Blocker{}, err
		}
		c.read = true
	}
	if c.read && !e.has(BugTrustCache) && !e.confirmedByRun(c) {
		if err := e.confirmOwn(ctx, c); err != nil {
			return false, Blocker{}, err
		}
	}
	if err := e.ensureCover(ctx, c); err != nil {
		return false, Blocker{}, err
	}
	c.clear, c.read = true, false
	c.Below = c.strong && len(c.passed) == 0
	if c.strong {
		// Every lower claim it did not pass has ended: those it passed
		// are all that may be live below it (tip.go).
		e.noteHeld(c, passedRefs(c))
	}
	if c.Below {
		e.learnOwn(c)
	}
	return true, Blocker{}, nil
}

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

// walkDown is one step of c's walk: it looks at the epoch right below
// c.checked and decides what it says for c. Below the key's floor, or at
// an ended claim, the walk goes on (lower, or clear); at a live claim c
// passes, the walk goes on with it in c.passed; at a live claim c does not
// pass, c waits for it (wait, with its blocker b). An error ends the walk.
func (e *Engine) walkDown(ctx context.Context, c *Claim) (b Blocker, wait bool, err error) {
	epoch := c.checked - 1
	if below, err := e.underFloor(ctx, c, epoch); err != nil || below {
		return Blocker{}, false, err
	}
	d, found, err := e.readBelow(ctx, c, epoch)
	if err != nil {
		return Blocker{}, false, err
	}
	if !found {
		return Blocker{}, false, e.missingBelow(ctx, c, epoch)
	}
	c.read = true
	if d.Seg != c.Seg && !e.has(BugNoCoverage) {
		// A claim of another segment above c's first: a later
		// segment started, so c's is over.
		e.dropCover(c.Key, c.Seg)
		e.abandon(context.WithoutCancel(ctx), c)
		return Blocker{}, false, fmt.Errorf("%w: %q: epoch %d is of segment %d", errLapsed, c.Key, epoch, d.Seg)
	}
	// Every claim a walk reads, ended or not, whatever stops the walk:
	// the claim right below c is always read (a walk that holds with no
	// read holds on its insert: tip.go).
	if err := e.claimOfHistory(ctx, c, d); err != nil {
		return Blocker{}, false, err
	}
	ended, kind, marker, b, err := e.endedIn(ctx, c, d)
	if err != nil {
		return Blocker{}, false, err
	}
	if !ended {
		return e.liveBelow(ctx, c, epoch, d, b)
	}
	if kind == KindRelease {
		if below, own := e.ownReleaseStops(c, d); own {
			// A release of ours: the claims its hold left live below
			// it are all that may be live below it, and c passes them.
			for _, r := range below {
				c.passed = append(c.passed, passedClaim{d: r.d, b: e.blockerOf(r.d)})
			}
			c.clear, c.strong = true, true
			c.after, c.hasAfter = d, true
			return Blocker{}, false, nil
		}
		if e.stopsAt(c.Terms, d, marker) {
			// It held once: nothing below it can keep c from holding.
			c.clear, c.strong = true, stopsAll(d, marker)
			c.after, c.hasAfter = d, true
			return Blocker{}, false, nil
		}
	}
	c.checked = epoch
	return Blocker{}, false, nil
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

// readBelow returns the claim document of epoch, the one below c's
// checked epoch: the blocker the last walk found live, or a read.
func (e *Engine) readBelow(ctx context.Context, c *Claim, epoch uint64) (d Doc, found bool, err error) {
	if rr := e.runReader(); rr != nil && !c.run.covers(epoch) {
		if err := e.readRun(ctx, c, rr, epoch); err != nil {
			return Doc{}, false, err
		}
	}
	if c.run.covers(epoch) {
		d, found := c.run.claim(epoch)
		return d, found, nil
	}
	if c.hasBlocker && c.blocker.Epoch == epoch {
		return c.blocker, true, nil
	}
	c.read = true
	return e.store.Get(ctx, ClaimID(c.Key, epoch))
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
	if f := e.floorOf(c.Key, c.Seg); epoch < f.Epoch {
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
	e.noteGap(c.Key, epoch)
	return err
}

// liveBelow decides what the live claim d of epoch below c means for c
// (b is d's blocker): d may lie below a floor a prune raised meanwhile
// (the walk goes on), c may pass it (the walk goes on with d in c.passed),
// or c waits for it.
//
// A waiting weighted walker passes a claim even when the weights it
// passed leave it no room, as long as the end of a single one of them
// could still give it room (oneEndFits): so that the units it lacks
// (Shortfall) are all it lacks when one end is all it needs. A walk that
// stopped at the limit knew only the claims above that point: the end of
// one of those woke its waiter, which had room among them and walked the
// rest then, as the one below it came to hold on that same end (a full
// Semaphore's second in line, beside a unit kept below: its walk read the
// claims below and their markers while the next holder read its own, and
// the handoff took longer with 4 waiting than with 1). Past that point no
// single end can give it room, and a walk on down the whole queue cost
// every waiter behind reads, hints and watches for each claim below it:
// it stops there and waits (full), and a later walk goes on from there
// (c.checked). A try, which never waits, stops at the limit.
func (e *Engine) liveBelow(ctx context.Context, c *Claim, epoch uint64, d Doc, b Blocker) (Blocker, bool, error) {
	passes := e.passes(ctx, c.Terms, d)
	with := append(c.passed[:len(c.passed):len(c.passed)], passedClaim{d: d, b: b})
	if passes && (e.fits(c.Terms, with) || !c.try && oneEndFits(c.Terms, with)) {
		// Passed live or not (an ended claim whose marker a prune
		// deleted, below: counting it only costs room), and nothing
		// read: the walk goes on, and a claim it then finds missing
		// makes it read the gate again (missingBelow).
		c.passed = append(c.passed, passedClaim{d: d, b: b, walk: c.walks})
		c.checked = epoch
		return Blocker{}, false, nil
	}
	if epoch < c.Epoch-1 && !e.has(BugNoFloorProof) {
		// About to wait, and below an ended or passed claim: perhaps
		// a claim whose marker a prune deleted after this walk's floor
		// check (a claim right below a live one is never pruned). The
		// gate that covers the key now says.
		if f, err := e.freshFloor(ctx, c); err != nil {
			return Blocker{}, false, err
		} else if epoch < f.Epoch {
			return Blocker{}, false, e.belowFloor(ctx, c, f)
		}
	}
	if passes {
		// Its claims leave it no room (a try gives up), and no single
		// end among them would: it waits for them.
		c.passed = append(c.passed, passedClaim{d: d, b: b, walk: c.walks})
		c.checked = epoch
		if b, full, err := e.full(ctx, c); err != nil || full {
			return b, full, err
		}
		return Blocker{}, false, nil
	}
	c.blocker, c.hasBlocker = d, true
	return b, true, nil
}

// oneEndFits reports whether the end of a single claim among passed could
// leave room for weighted walker w beside the rest: the weights passed,
// but the largest, and w's own fit its limit.
func oneEndFits(w Terms, passed []passedClaim) bool {
	if w.Mode != Weighted {
		return true
	}
	sum, largest := w.Weight, int64(0)
	for _, p := range passed {
		sum += max(p.d.Weight, 0)
		largest = max(largest, p.d.Weight)
	}
	return sum-largest <= w.Limit
}

// passes is the grant rule's passes, or, with BugSharedPassesAll, a shared
// walker passing every live claim (and the sync family's planted errors,
// plantedPasses).
func (e *Engine) passes(ctx context.Context, w Terms, d Doc) bool {
	if e.has(BugSharedPassesAll) && w.Mode == Shared {
		return true
	}
	if p, ok := e.plantedPasses(ctx, w, d); ok {
		return p
	}
	return passes(w, d)
}

// fits is the grant rule's fits, or, with BugWeightsNotSummed, each
// weight checked against the limit alone (and the sync family's planted
// errors, plantedFits).
func (e *Engine) fits(w Terms, passed []passedClaim) bool {
	if f, ok := e.plantedFits(w, passed); ok {
		return f
	}
	if e.has(BugWeightsNotSummed) {
		for _, p := range passed {
			if !fits(w, []passedClaim{p}) {
				return false
			}
		}
		return true
	}
	return fits(w, passed)
}

// stopsAt is the grant rule's stopsAt, or, with BugAnyReleaseStops, any
// release ending every walk.
func (e *Engine) stopsAt(w Terms, d, m Doc) bool {
	return e.has(BugAnyReleaseStops) || stopsAt(w, d, m)
}

// coverFloor returns the floor of the gate that covers c's segment now.
// A process that no longer knows such a gate (a waiter's coverage comes
// from its claim's insert, and only holders insert the next gates) reads
// the gates around the store's time; if none covers c's segment, c is
// given up (its segment lapsed: claim again).
func (e *Engine) coverFloor(ctx context.Context, c *Claim) (Floor, error) {
	ks := e.snapshot(c.Key)
	if ks.seg == c.Seg && e.sameKnown(ks.history, c.History) && e.covered(ks, e.clock.ServerNow().Latest) || e.has(BugNoCoverage) {
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
	g, ok, err := e.liveSegment(ctx, c.Key)
	if err != nil {
		return Floor{}, err
	}
	if !ok || g.Seg != c.Seg || !e.sameKnown(c.History, g.Nonce) {
		// (A gate of another history than c's: a refresh refused, or a
		// stray; or the store was emptied since, and c was made on
		// knowledge that is stale.)
		e.abandon(context.WithoutCancel(ctx), c)
		e.dropCover(c.Key, c.Seg)
		return Floor{}, fmt.Errorf("%w: %q: no gate of this history covers segment %d", errLapsed, c.Key, c.Seg)
	}
	e.learnGate(c.Key, g)
	return e.ownFloorCheck(ctx, c, e.floorOf(c.Key, c.Seg))
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
	_, counts, err := e.floorCounts(ctx, c.Key, f)
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
	e.noteGap(c.Key, f.Epoch)
	return Floor{}, err
}

// confirmOwn checks that c's own claim document is in the store, with its
// nonce. A walk's reads came after the insert; if the claim is still there
// after them, the store was not emptied since the insert, so the reads saw
// the history the claim is part of. It is a request of its own, sent once
// the walk's reads are answered, never beside them: a marker sent before
// an emptying may land after it (DESIGN.md, rule 11), in a store where
// another process then holds the key, and a read of the claim that the
// store answered before the emptying would not show it gone. So a woken
// Mutex waiter on a store that reads no runs pays two reads in a row (the
// marker, then its claim: TestWokenWaiterReads).
func (e *Engine) confirmOwn(ctx context.Context, c *Claim) error {
	d, found, err := e.store.Get(ctx, ClaimID(c.Key, c.Epoch))
	if err != nil {
		return err
	}
	if !found || d.Nonce != c.Nonce {
		return e.voidClaim(ctx, c, fmt.Sprintf("the claim of epoch %d is gone", c.Epoch))
	}
	return nil
}

// voidClaim gives c up after the store showed it lost the key's history:
// everything learned is forgotten and c is withdrawn (a harmless marker if
// its claim is gone).
func (e *Engine) voidClaim(ctx context.Context, c *Claim, why string) error {
	e.forgetAll()
	e.abandon(context.WithoutCancel(ctx), c)
	return fmt.Errorf("%w: %q: %s", ErrReset, c.Key, why)
}
