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
	if e.holds.takeHead(c) || c.clear && !c.read {
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
		e.keys.learnOwn(c)
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
	if b, full, err := e.roomAmongPassed(ctx, c); err != nil || full {
		return false, b, err
	}
	if err := e.confirmReads(ctx, c, first); err != nil {
		return false, Blocker{}, err
	}
	if err := e.ensureCover(ctx, c); err != nil {
		return false, Blocker{}, err
	}
	e.heldOnReads(c)
	return true, Blocker{}, nil
}

// roomAmongPassed decides whether the live claims c passed leave room
// for it: if they do not, the walk's floor is read again and c waits
// (full) for the claim full finds, with its blocker b.
func (e *Engine) roomAmongPassed(ctx context.Context, c *Claim) (b Blocker, full bool, err error) {
	if e.fits(c.Terms, c.passed) {
		return Blocker{}, false, nil
	}
	if err := e.refloor(ctx, c); err != nil {
		return Blocker{}, false, err
	}
	return e.full(ctx, c)
}

// confirmReads confirms what c's walk read before c may hold on it: the
// segment's gate, when the walk reached its first epoch, and c's own
// claim, still in the store, when the walk read anything.
func (e *Engine) confirmReads(ctx context.Context, c *Claim, first uint64) error {
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
			return err
		}
		c.read = true
	}
	if c.read && !e.has(BugTrustCache) && !e.confirmedByRun(c) {
		return e.confirmOwn(ctx, c)
	}
	return nil
}

// heldOnReads records that c holds on what its walk read and confirmed.
func (e *Engine) heldOnReads(c *Claim) {
	c.clear, c.read = true, false
	c.Below = c.strong && len(c.passed) == 0
	if c.strong {
		// Every lower claim it did not pass has ended: those it passed
		// are all that may be live below it (tip.go).
		e.holds.noteHeld(c, passedRefs(c))
	}
	if c.Below {
		e.keys.learnOwn(c)
	}
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
		e.keys.dropCover(c.Key, c.Seg)
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
				c.passed = append(c.passed, passedClaim{d: r.d, b: e.judge.blockerOf(r.d)})
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

// readBelow returns the claim document of epoch, the one below c's
// checked epoch: the blocker the last walk found live, or a read.
func (e *Engine) readBelow(ctx context.Context, c *Claim, epoch uint64) (d Doc, found bool, err error) {
	if e.rd.runReader() != nil && !c.run.covers(epoch) {
		if err := e.readRun(ctx, c, epoch); err != nil {
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

// readRun reads, for c's walk, the run from some epochs below epoch (not
// below c's segment's first epoch or the key's floor) up to epoch, or up
// to c's own claim if that lies near (a walk from the top, or a waiter's
// next walk behind a few claims): runWindow epochs for the walk's first
// run, twice as many for each next one. A run that reaches c's claim and
// does not find it there, with its nonce, shows that the store lost the
// key's history since c's insert: c is given up (ErrReset), as
// confirmOwn would.
func (e *Engine) readRun(ctx context.Context, c *Claim, epoch uint64) error {
	depth := uint64(runWindow) << min(c.runs, 20)
	c.runs++
	// Not below the floor (a floor learned since the walk checked epoch
	// against it may lie above epoch: the run then starts at epoch).
	lo := min(max(c.Seg, 1, e.keys.floorOf(c.Key, c.Seg).Epoch), epoch)
	if epoch > depth && epoch-depth > lo {
		lo = epoch - depth
	}
	hi := epoch
	if c.Epoch-epoch <= 4*runWindow {
		hi = c.Epoch
	}
	// The run confirms c's claim only if no other read was in flight
	// when it was sent, and none is sent or answered after its reply
	// until c holds (confirmedByRun): what such a read teaches could come
	// from the store before it lost the history the run shows gone.
	docs, seq, ok, err := e.rd.getRun(ctx, c.Key, lo, hi)
	if !ok || err != nil {
		return err // (not ok: the store reads no runs, read by ID)
	}
	r := newRun(c.Key, lo, hi, docs)
	c.read = true
	c.run, c.runSeq = r, 0
	if hi != c.Epoch {
		return nil
	}
	if own, ok := r.claim(c.Epoch); (!ok || own.Nonce != c.Nonce) && !e.has(BugRunOwnUnchecked) {
		return e.voidClaim(ctx, c, fmt.Sprintf("the claim of epoch %d is gone", c.Epoch))
	}
	c.runSeq = seq // (0 if another read was in flight)
	return nil
}

// confirmedByRun reports whether c's own claim was confirmed by the last
// run its walk read, with no read of this engine's in flight when it was
// sent, nor sent or answered since its reply (of any claim's: a read of
// another goroutine merely costs c a confirmOwn).
func (e *Engine) confirmedByRun(c *Claim) bool {
	if e.has(BugRunOwnUnchecked) {
		return c.run != nil
	}
	return e.rd.confirmed(c.runSeq)
}

// endedIn is ended for a claim d below c: its marker from c's run if the
// run covers it, or read. A live claim that c's mode passes needs no read
// of its session: c passes it whether it lives or not (a weighted walker
// counts its weight, and reads the sessions only if the weights leave it
// no room: full).
func (e *Engine) endedIn(ctx context.Context, c *Claim, d Doc) (ended bool, kind string, marker Doc, b Blocker, err error) {
	var m Doc
	var found bool
	if c.run.covers(d.Epoch) {
		m, found = c.run.end(d)
	} else {
		if m, found, err = e.store.Get(ctx, EndID(d.Key, d.Epoch, d.Nonce)); err != nil {
			return false, "", Doc{}, Blocker{}, err
		}
	}
	if found {
		return true, m.Kind, m, Blocker{}, nil
	}
	if e.passes(ctx, c.Terms, d) {
		return false, "", Doc{}, e.judge.blockerOf(d), nil
	}
	return e.judge.unended(ctx, d)
}

// passes is the grant rule's passes, or, with BugSharedPassesAll, a shared
// walker passing every live claim (and the sync family's planted errors,
// plantedPasses).
func (e *Engine) passes(ctx context.Context, w Terms, d Doc) bool {
	if e.has(BugSharedPassesAll) && w.Mode == Shared {
		return true
	}
	if p, ok := e.judge.plantedPasses(ctx, w, d); ok {
		return p
	}
	return passes(w, d)
}

// fits is the grant rule's fits, or, with BugWeightsNotSummed, each
// weight checked against the limit alone (and the sync family's planted
// errors, plantedFits).
func (e *Engine) fits(w Terms, passed []passedClaim) bool {
	if f, ok := e.plant.plantedFits(w, passed); ok {
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
	e.keys.forgetAll()
	e.holds.forgetHeads() // (apart from the keys' lock: see doc_types.go, I1)
	e.abandon(context.WithoutCancel(ctx), c)
	return fmt.Errorf("%w: %q: %s", ErrReset, c.Key, why)
}
