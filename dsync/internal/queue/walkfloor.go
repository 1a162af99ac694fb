package queue

import (
	"context"
	"errors"
	"fmt"
)

// A walk's floor step: what it proves of the floor of the gate that
// covers its claim's segment (floor.go) before it goes below an epoch or
// waits, where it ends at that floor, and which of the claims it passed
// that floor drops before it waits for them (dropBelowFloor); then what
// the walk checks of the claims it reads against its segment: the history
// each was sent in (claimOfHistory), and whether those it passed leave it
// room (full).

// refloor reads the gate that covers c again before c waits for the live
// claims its walk passed below an ended or passed one (liveBelow does the
// same where a walk stops): a prune may have deleted the marker of one of
// them after this walk's floor check, and dropBelowFloor drops the
// claims below the floor it reads. Only the walk that found them reads it.
func (e *Engine) refloor(ctx context.Context, c *Claim) error {
	if !e.refloorDue(c) {
		return nil
	}
	_, err := e.freshFloor(ctx, c)
	return err
}

// underFloor reports whether epoch lies below the floor of the gate that
// covers c's segment now: if so, the walk ends there (belowFloor).
func (e *Engine) underFloor(ctx context.Context, c *Claim, epoch uint64) (below bool, err error) {
	f, err := e.coverFloor(ctx, c)
	if err != nil {
		return false, err
	}
	if e.floorEnded(epoch, f) {
		// Below the key's floor every epoch has ended.
		return true, e.belowFloor(ctx, c, f)
	}
	return false, nil
}

// judgeMissing decides what a missing claim of epoch below c means
// (missingBelow): a nil error goes on with the walk (the claim was pruned
// below a floor), and an error ends it (the store lost the key's history).
func (e *Engine) judgeMissing(ctx context.Context, c *Claim, epoch uint64) error {
	// A missing claim: pruning deletes only below a floor, and the
	// floor this process knows while it relies on the segment is
	// at least that of any gate a prune relied on (floor.go).
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
	return &giveUp{reset: true, gap: epoch, err: fmt.Errorf("%w: %q: epoch %d is missing", ErrReset, c.Key, epoch)}
}

// coverFloor returns the floor of the gate that covers c's segment now.
// A process that no longer knows such a gate (a waiter's coverage comes
// from its claim's insert, and only holders insert the next gates) reads
// the gates around the store's time; if none covers c's segment, c is
// given up (its segment lapsed: claim again).
func (e *Engine) coverFloor(ctx context.Context, c *Claim) (Floor, error) {
	ks := e.keys.snapshot(c.Key)
	if e.knowsCover(ks, c) {
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
	if e.clearsFloor(c, f) {
		return f, nil
	}
	return Floor{}, &giveUp{err: fmt.Errorf("%w: %q: epoch %d lies below the floor %d", errLapsed, c.Key, c.Epoch, f.Epoch)}
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
		counts, err := e.floorCounts(ctx, c, f)
		if err != nil {
			return Floor{}, err
		}
		if counts {
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
	return Floor{}, &giveUp{reset: true, gap: f.Epoch,
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
		if e.keptOverFloor(p.d, f) {
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

// FloorDrops returns how many claims weighted waiters passed live and
// then dropped unread, as below the floor of the gate that covers them
// (dropBelowFloor).
func (e *Engine) FloorDrops() int64 { return e.floorDrops.Load() }

// A walk's judgement of each claim it reads: whether it was sent in the
// store's history its own claim records (the store's emptyings and
// restores: history.go).

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
	// c was made on knowledge of its segment learnt in another history of
	// the store than the one it is in: that knowledge is dropped, and the
	// key's next claim starts or joins the store's segment.
	return &giveUp{dropStale: true,
		err: fmt.Errorf("%w: %q: epoch %d was sent in another history of the store", errLapsed, c.Key, d.Epoch)}
}

// Whether the live claims a walker passed leave it room (full): the grant
// step's (walkhold.go) and, for a walker that passes a live claim it has
// no room beside, the walk's (full.go: liveBelow). The claims below the
// floor are dropped first (dropBelowFloor).

// full re-reads the live claims c passed, drops those that ended since,
// and reports whether their weights still leave no room for c; if so, b
// is the lowest of them, which c waits for.
//
// It reads no more than it needs: once the claims not yet re-read, all
// counted live, leave room for c, the rest are kept as they were (a claim
// counted live that has ended only costs room, never safety). The highest
// first, so that a woken waiter reads the claim whose release woke it
// first. On a store that reads runs, one run from the lowest claim passed
// up to c's own (which confirms c's claim too: confirmedByRun) replaces a
// marker read per claim. Its callers drop the passed claims below the
// key's floor first, unread (dropBelowFloor, the walk's floor step).
func (e *Engine) full(ctx context.Context, c *Claim) (b Blocker, full bool, err error) {
	if err := e.fullRun(ctx, c); err != nil {
		return Blocker{}, false, err
	}
	if err := e.readSuspects(ctx, c); err != nil {
		return Blocker{}, false, err
	}
	live := c.passed[:0]
	for i, p := range c.passed {
		// (At i = 0 every claim left counts: room only if suspects
		// ended.)
		if e.fits(c.Terms, append(live[:len(live):len(live)], c.passed[i:]...)) {
			// Room for c with every claim left counted live.
			live = e.countUnread(live, c.passed[i:])
			break
		}
		if p.walk == c.walks {
			// This walk found it live a moment ago (liveBelow):
			// reading its marker again proves nothing new.
			live = append(live, p)
			continue
		}
		ended, pb, err := e.endedPassed(ctx, c, p.d)
		if err != nil {
			c.passed = append(live, c.passed[len(live):]...)
			return Blocker{}, false, err
		}
		if !ended {
			p.b, p.walk = pb, c.walks
			live = append(live, p)
		}
	}
	c.passed = live
	if e.fits(c.Terms, c.passed) {
		return Blocker{}, false, nil
	}
	return c.passed[len(c.passed)-1].b, true, nil
}
