package queue

import (
	"context"
	"errors"
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
	head, blocker, err = e.walk(ctx, c)
	if err != nil { // (off the path of a walk that holds: no v to allocate)
		if v := (*giveUp)(nil); errors.As(err, &v) {
			return false, Blocker{}, e.withdraw(ctx, c, v)
		}
	}
	return head, blocker, err
}

// walk is Walk up to its verdict: every step it takes returns what it
// found, and a verdict that c must never hold (giveUp) ends it.
func (e *Engine) walk(ctx context.Context, c *Claim) (head bool, blocker Blocker, err error) {
	if c.ended {
		return false, Blocker{}, fmt.Errorf("%w: %q: epoch %d was ended", errLapsed, c.Key, c.Epoch)
	}
	c.run, c.runSeq, c.runs = nil, 0, 0 // what a run showed holds for the walk that read it
	c.walks++
	onInsert := e.holds.takeHead(c) || c.clear && !c.read // (no read: c holds on its insert)
	first := max(c.Seg, 1)
	for !onInsert && !c.clear && c.checked > first {
		b, wait, err := e.walkDown(ctx, c)
		if err != nil || wait {
			return false, b, err
		}
	}
	return e.hold(ctx, c, first, onInsert)
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
	if e.laterSegment(c, d) {
		// A claim of another segment above c's first: a later
		// segment started, so c's is over.
		return Blocker{}, false, &giveUp{drop: true,
			err: fmt.Errorf("%w: %q: epoch %d is of segment %d", errLapsed, c.Key, epoch, d.Seg)}
	}
	// Every claim a walk reads, ended or not, whatever stops the walk:
	// the claim right below c is always read (a walk that holds with no
	// read holds on its insert: tip.go).
	if err := e.claimOfHistory(ctx, c, d); err != nil {
		return Blocker{}, false, err
	}
	j, err := e.endedIn(ctx, c, d)
	if err != nil {
		return Blocker{}, false, err
	}
	if !j.ended {
		return e.liveBelow(ctx, c, epoch, d, j)
	}
	if j.kind == KindRelease {
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
		if e.stopsAt(c.Terms, d, j.marker) {
			// It held once: nothing below it can keep c from holding.
			c.clear, c.strong = true, stopsAll(d, j.marker)
			c.after, c.hasAfter = d, true
			return Blocker{}, false, nil
		}
	}
	c.checked = epoch
	return Blocker{}, false, nil
}
