package queue

import "context"

// What a walk does at a live claim below it (liveBelow): pass it, end at
// a floor below it, or wait for it (or, weighted, for the claims it
// passed: full, in walkfloor.go).

// liveBelow decides what the live claim d of epoch below c means for c
// (j is what endedIn found of it: its blocker, and whether c's mode
// passes it): d may lie below a floor a prune raised meanwhile
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
func (e *Engine) liveBelow(ctx context.Context, c *Claim, epoch uint64, d Doc, j judged) (Blocker, bool, error) {
	passes, b := j.passes, j.b
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
	if e.prunableBelow(c, epoch) {
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
