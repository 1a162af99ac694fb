package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// A walk's read step: the claim of the epoch below its checked one (from
// a run of the key's queue, the blocker the last walk found live, or a
// read by ID), and that claim's end marker; and what full re-reads of
// the live claims the walk passed (a run up to c's own claim, and their
// markers: fullRun, readSuspects, endedPassed).

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
	if !e.runHasOwn(r, c) {
		return &giveUp{reset: true,
			err: fmt.Errorf("%w: %q: the claim of epoch %d is gone", ErrReset, c.Key, c.Epoch)}
	}
	c.runSeq = seq // (0 if another read was in flight)
	return nil
}

// judged is what a walk found of a claim below its walker (endedIn):
// ended, with its marker (and the marker's kind), or live, with its
// blocker and whether the walker's mode passes it.
type judged struct {
	ended  bool
	kind   string
	marker Doc
	b      Blocker
	passes bool
}

// endedIn is ended for a claim d below c: its marker from c's run if the
// run covers it, or read. A live claim that c's mode passes needs no read
// of its session: c passes it whether it lives or not (a weighted walker
// counts its weight, and reads the sessions only if the weights leave it
// no room: full).
func (e *Engine) endedIn(ctx context.Context, c *Claim, d Doc) (judged, error) {
	var m Doc
	var found bool
	if c.run.covers(d.Epoch) {
		m, found = c.run.end(d)
	} else {
		var err error
		if m, found, err = e.store.Get(ctx, EndID(d.Key, d.Epoch, d.Nonce)); err != nil {
			return judged{}, err
		}
	}
	if found {
		return judged{ended: true, kind: m.Kind, marker: m}, nil
	}
	if e.passes(ctx, c.Terms, d) {
		return judged{b: e.judge.blockerOf(d), passes: true}, nil
	}
	ended, kind, marker, b, err := e.judge.unended(ctx, d)
	return judged{ended: ended, kind: kind, marker: marker, b: b}, err
}

// fullRun reads, on a store that reads runs, one run from the lowest
// claim c passed up to c's own, unless c's run covers it already.
func (e *Engine) fullRun(ctx context.Context, c *Claim) error {
	if e.rd.runReader() == nil || len(c.passed) == 0 {
		return nil
	}
	lowest := c.passed[len(c.passed)-1].d.Epoch
	if c.run.covers(lowest) && c.run.covers(c.Epoch) {
		return nil
	}
	c.run, c.runSeq = nil, 0
	return e.readRun(ctx, c, lowest)
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

// endedPassed is ended for a claim d c passed: its marker from c's run if
// the run covers it, or read; a claim without one is ended dead if its
// session expired (unended), so that a dead unit frees its room.
func (e *Engine) endedPassed(ctx context.Context, c *Claim, d Doc) (ended bool, b Blocker, err error) {
	if !c.run.covers(d.Epoch) {
		ended, _, _, b, err := e.judge.ended(ctx, d)
		return ended, b, err
	}
	if _, found := c.run.end(d); found {
		return true, Blocker{}, nil
	}
	ended, _, _, b, err = e.judge.unended(ctx, d)
	return ended, b, err
}
