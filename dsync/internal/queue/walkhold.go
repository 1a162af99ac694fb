package queue

import (
	"context"
	"errors"
	"fmt"
)

// A walk's grant step: whether its claim holds once nothing below its
// checked epoch can keep it from holding, and what it records then.

// hold is the walk's last step, once nothing below c's checked epoch can
// keep c from holding. On what its insert proved (onInsert: Claim, with no
// read since), c holds once its segment's coverage is ensured. On what its
// walk read (clear, or the walk reached first, its segment's first epoch),
// the live claims it passed must also leave room for it, and what the walk
// read must be confirmed (the segment's gate, c's own claim): otherwise c
// waits for the lowest of the claims it passed.
func (e *Engine) hold(ctx context.Context, c *Claim, first uint64, onInsert bool) (head bool, blocker Blocker, err error) {
	if !onInsert {
		if c.checked <= first {
			c.strong = true // the segment's first epoch: nothing below
		}
		if b, full, err := e.roomAmongPassed(ctx, c); err != nil || full {
			return false, b, err
		}
	}
	if err := e.confirm(ctx, c, first, !onInsert); err != nil {
		return false, Blocker{}, err
	}
	if onInsert {
		c.clear = true
		if c.Below {
			e.keys.learnOwn(c)
		}
		return true, Blocker{}, nil
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
	if err := e.dropBelowFloor(ctx, c); err != nil {
		return Blocker{}, false, err
	}
	return e.full(ctx, c)
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

// What a walk confirms before its claim relies on what it read: the
// coverage of its segment (ensureCover) and, when nothing lies below it in
// its segment, the gate (proveGate); and its own claim, still in the
// store (confirmOwn).

// confirm is the walk's check before c holds: what its walk read, if it
// read anything since the insert (reads: confirmReads), then its
// segment's coverage (ensureCover).
func (e *Engine) confirm(ctx context.Context, c *Claim, first uint64, reads bool) error {
	if reads {
		if err := e.confirmReads(ctx, c, first); err != nil {
			return err
		}
	}
	return e.ensureCover(ctx, c)
}

// confirmReads confirms what c's walk read before c may hold on it: the
// segment's gate, when the walk reached its first epoch, and c's own
// claim, still in the store, when the walk read anything.
func (e *Engine) confirmReads(ctx context.Context, c *Claim, first uint64) error {
	if e.gateDue(c, first) {
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
	if c.read && !e.confirmedByRun(c) {
		return e.confirmOwn(ctx, c)
	}
	return nil
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
		return &giveUp{reset: true, err: fmt.Errorf("%w: %q: the claim of epoch %d is gone", ErrReset, c.Key, c.Epoch)}
	}
	return nil
}

// ensureCover checks, before c holds, that its segment is covered now
// (refreshing it if its coverage is near its end), by what this process
// learnt of it in the history c records: knowledge of a segment of the
// same number learnt in another history is not c's. A claim whose
// segment lapsed is given up (giveUp, with errLapsed): a process that
// lost coverage never relies on that segment again.
func (e *Engine) ensureCover(ctx context.Context, c *Claim) error {
	ks := e.keys.snapshot(c.Key)
	now := e.clock.ServerNow()
	ours := ks.seg == c.Seg && e.segments.sameKnown(ks.history, c.History)
	if !ours || !e.segments.covered(ks, now.Latest) {
		return &giveUp{dropAfter: ours, err: fmt.Errorf("%w: %q", errLapsed, c.Key)}
	}
	if e.segments.bucket(now.Latest)+1 > ks.cover {
		ok, err := e.segments.refreshKey(ctx, c.Key)
		switch {
		case !ok && err != nil:
			// Over, and why (the store's span is another since: the
			// next claim is refused with it).
			return &giveUp{err: fmt.Errorf("%w: %q: %w", errLapsed, c.Key, err)}
		case !ok:
			return &giveUp{err: fmt.Errorf("%w: %q", errLapsed, c.Key)}
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
	ours := ks.seg == c.Seg && e.segments.sameKnown(ks.history, c.History)
	if ours {
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
	}
	// (Its segment is dropped if it was c's: c's segment is over.)
	return &giveUp{drop: ours,
		err: fmt.Errorf("%w: %q: no gate of this history of the store names segment %d", errLapsed, c.Key, c.Seg)}
}
