package queue

import "context"

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
