package chain

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// What a weighted walker re-reads once the live claims it passed may have
// left it room (walk.go: holdOnReads, liveBelow).

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
// marker read per claim.
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

// fullRun reads, on a store that reads runs, one run from the lowest
// claim c passed up to c's own, unless c's run covers it already.
func (e *Engine) fullRun(ctx context.Context, c *Claim) error {
	rr := e.runReader()
	if rr == nil || len(c.passed) == 0 {
		return nil
	}
	lowest := c.passed[len(c.passed)-1].d.Epoch
	if c.run.covers(lowest) && c.run.covers(c.Epoch) {
		return nil
	}
	c.run, c.runSeq = nil, 0
	return e.readRun(ctx, c, rr, lowest)
}

// endedPassed is ended for a claim d c passed: its marker from c's run if
// the run covers it, or read; a claim without one is ended dead if its
// session expired (unended), so that a dead unit frees its room.
func (e *Engine) endedPassed(ctx context.Context, c *Claim, d Doc) (ended bool, b Blocker, err error) {
	if !c.run.covers(d.Epoch) {
		ended, _, _, b, err := e.ended(ctx, d)
		return ended, b, err
	}
	if _, found := c.run.end(d); found {
		return true, Blocker{}, nil
	}
	ended, _, _, b, err = e.unended(ctx, d)
	return ended, b, err
}

// readSuspects reads, all at once, whether the claims c passed whose ends
// its waiter heard of (Suspect) have ended, and drops those that have
// from c.passed. A woken waiter that needs several units to end (a full
// Semaphore's second in line, which waits for the units of the first
// and of a holder) reads their markers in one round trip, not one after
// the other. The reads are independent of each other (a marker, once
// found, stays until its claim is pruned below a floor: a marker not
// found only keeps its claim counted live), and confirmOwn, sent after
// every read of the walk is answered, follows them all.
func (e *Engine) readSuspects(ctx context.Context, c *Claim) error {
	suspects := c.suspects
	c.suspects = nil
	var idx []int
	for i, p := range c.passed {
		if slices.Contains(suspects, p.d.Epoch) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	type result struct {
		ended bool
		b     Blocker
		err   error
	}
	res := make([]result, len(idx))
	var wg sync.WaitGroup
	for j, i := range idx {
		wg.Go(func() {
			ended, b, err := e.endedPassed(ctx, c, c.passed[i].d)
			res[j] = result{ended, b, err}
		})
	}
	wg.Wait()
	var errs error
	drop := make(map[int]bool, len(idx))
	for j, i := range idx {
		switch r := res[j]; {
		case r.err != nil:
			errs = cmp.Or(errs, r.err)
		case r.ended:
			drop[i] = true
		default:
			c.passed[i].b, c.passed[i].walk = r.b, c.walks
		}
	}
	live := c.passed[:0]
	for i, p := range c.passed {
		if !drop[i] {
			live = append(live, p)
		}
	}
	c.passed = live
	return errs
}
