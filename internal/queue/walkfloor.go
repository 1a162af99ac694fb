package queue

import (
	"context"
	"fmt"
)

// A walk's floor step: what it proves of the floor of the gate that
// covers its claim's segment (floor.go) before it goes below an epoch or
// waits, where it ends at that floor, and which of the claims it passed
// that floor drops before it waits for them (dropBelowFloor).

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
	return &giveUp{reset: true, gap: epoch, hasGap: true, err: fmt.Errorf("%w: %q: epoch %d is missing", ErrReset, c.Key, epoch)}
}

// coverFloor returns the floor of the gate that covers c's segment now.
// A process that no longer knows such a gate (a waiter's coverage comes
// from its claim's insert, and only holders insert the next gates) reads
// the gates around the store's time; if none covers c's segment, c is
// given up (its segment lapsed: claim again).
func (e *Engine) coverFloor(ctx context.Context, c *Claim) (Floor, error) {
	ks := e.keys.snapshot(c.Key)
	if ks.seg == c.Seg && e.segments.sameKnown(ks.history, c.History) && e.segments.covered(ks, e.clock.ServerNow().Latest) || e.has(BugNoCoverage) {
		return e.ownFloorCheck(c, ks.floor)
	}
	return e.freshFloor(ctx, c)
}

// freshFloor reads the gate that covers c's segment now, and returns its
// floor (c is given up if no gate covers its segment, or the one that
// does records another history than c: c's owner then learnt the
// segment in another history, or the gate landed late in this one, and
// either way c waits for no gate it cannot rely on).
func (e *Engine) freshFloor(ctx context.Context, c *Claim) (Floor, error) {
	f, ok, err := e.gateFloor(ctx, c)
	if err != nil {
		return Floor{}, err
	}
	if !ok {
		// (A gate of another history than c's: a refresh refused, or a
		// stray; or the store was emptied since, and c was made on
		// knowledge that is stale.)
		return Floor{}, &giveUp{dropAfter: true,
			err: fmt.Errorf("%w: %q: no gate of this history covers segment %d", errLapsed, c.Key, c.Seg)}
	}
	return e.ownFloorCheck(c, f)
}

// ownFloorCheck returns f, unless c itself lies below it (or at it, with
// another nonce): c's insert landed in a hole pruning left (no claim that
// has not ended lies below a floor), and c is given up.
func (e *Engine) ownFloorCheck(c *Claim, f Floor) (Floor, error) {
	if c.Epoch > f.Epoch || c.Epoch == f.Epoch && c.Nonce == f.Nonce {
		return f, nil
	}
	v := &giveUp{kind: giveUpUnderFloor, err: fmt.Errorf("%w: %q: epoch %d lies below the floor %d", errLapsed, c.Key, c.Epoch, f.Epoch)}
	if e.overrules(v) {
		return f, nil
	}
	return Floor{}, v
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
	for {
		_, counts, err := e.rd.floorCounts(ctx, c.Key, f)
		if err != nil {
			return Floor{}, err
		}
		if counts || e.has(BugTrustCache) {
			return f, nil
		}
		// A prune that relied on a later gate than the one this process
		// knows may have deleted f's claim (a walk that passed live
		// claims without reading the gate again: liveBelow): the gate
		// that covers the key now may show a higher floor that counts.
		g, ok, err := e.gateFloor(ctx, c)
		if err != nil {
			return Floor{}, err
		}
		if !ok || g.Epoch <= f.Epoch {
			break
		}
		f = g
	}
	return Floor{}, &giveUp{reset: true, gap: f.Epoch, hasGap: true,
		err: fmt.Errorf("%w: %q: the floor %d names a claim the store does not hold", ErrReset, c.Key, f.Epoch)}
}

// gateFloor reads the gate that covers c's segment now, learns it, and
// returns its floor; ok is false (and nothing is given up or learned) if
// no gate covers the segment (or the one that does records another
// history than c): the caller then judges what it found as it would have
// without the read (a store that lost the key's history is a reset, not a
// lapse), but freshFloor, which gives c up.
func (e *Engine) gateFloor(ctx context.Context, c *Claim) (f Floor, ok bool, err error) {
	g, found, err := e.segments.liveSegment(ctx, c.Key)
	if err != nil || !found || g.Seg != c.Seg || !e.segments.sameKnown(c.History, g.Nonce) {
		return Floor{}, false, err
	}
	e.keys.learnGate(c.Key, g)
	return e.keys.floorOf(c.Key, c.Seg), true, nil
}

// dropBelowFloor drops from c.passed, before full reads their markers,
// the claims below the floor of the gate that covers c's segment now, if
// that floor counts (countedFloor, as a walk's stop at a floor: every
// epoch below it has ended); if any lay below it, so does c's walk, which
// ends there. It reads nothing more while the passed claims lie at or
// above the floor this process knows (coverFloor reads the gate only once
// this process no longer knows one that covers c now).
//
// Without it, a waiter would count for good a claim a prune deleted with
// its marker while it waited: it finds no marker, and the claim's owner
// may live on (holding other keys). A walk that went below such a claim
// meets what the prune deleted, and reads the floor (missingBelow), but a
// walk that stopped at this process's own release above it
// (ownReleaseStops) counts it from that release's hold and never walks
// below the release again; and a waiter for several units looks again
// only when their ends add up to what it lacks (Shortfall), so it may not
// look while the claim ends, a claim above it holds with every lower one
// ended (the floor rises there) and a release prunes it.
//
// It only ever drops claims that have ended for good. A floor that
// counts, in this store's history, says every epoch of c's segment below
// it has ended (its gate's sender vouched for it: a claim held with every
// lower claim ended, or a gate said so), and an ended claim never holds
// again. A floor read that is stale (a gate inserted since, not yet
// known; a gate that landed late, or twice, carrying an older floor:
// DESIGN.md rule 11) is lower than the store's, never higher than what
// has ended: a floor records what had ended when its gate was sent, and
// ends are never undone. It only drops fewer claims, which costs room,
// not safety; and the floor of the gate that covers c is at least that
// of any gate a prune relied on (floor.go), so the next look drops a
// claim whose marker a prune deleted after this floor was read. A floor of a
// store's earlier history (a gate that landed after an emptying) is
// judged as a walk's stop at a floor judges it, with the same reads: the
// gate names c's segment only if sent in this history (L3 in the package
// documentation), and the floor counts only while its claim is stored
// with its nonce; one that does not count gives c up. An emptying after
// the read is caught by confirmOwn, which a hold sends after every read
// of its walk (c.read).
func (e *Engine) dropBelowFloor(ctx context.Context, c *Claim) error {
	if len(c.passed) == 0 {
		return nil
	}
	lowest := c.passed[0].d.Epoch
	for _, p := range c.passed[1:] {
		lowest = min(lowest, p.d.Epoch)
	}
	f, err := e.coverFloor(ctx, c)
	if err != nil || lowest >= f.Epoch {
		return err
	}
	if f, err = e.countedFloor(ctx, c, f); err != nil {
		return err
	}
	live := c.passed[:0]
	for _, p := range c.passed {
		// The floor's own claim may still hold: it held with every
		// lower claim ended, which made it the floor.
		if p.d.Epoch > f.Epoch || p.d.Epoch == f.Epoch && !e.has(BugFloorClaimDropped) {
			live = append(live, p)
		}
	}
	e.floorDrops.Add(int64(len(c.passed) - len(live)))
	c.passed = live
	c.read = true
	if c.checked <= f.Epoch {
		c.clear, c.strong = true, true
	}
	return nil
}
