package queue

import "context"

// Whether the live claims a walker passed leave it room (full): the grant
// step's (walkhold.go) and, for a walker that passes a live claim it has
// no room beside, the walk's (full.go: liveBelow).

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
