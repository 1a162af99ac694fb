package queue

import "context"

// What a walk does at a live claim below it (liveBelow), and whether the
// live claims a weighted walker passed still leave it no room once they
// may have left it some (full, from walkhold.go: hold; what it reads is
// in walkread.go).

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
		if err := e.dropBelowFloor(ctx, c); err != nil {
			return Blocker{}, false, err
		}
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
			if !e.has(BugFullDropsUnread) {
				live = append(live, c.passed[i:]...)
			}
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
