package queue

import (
	"context"
	"errors"
	"fmt"
)

// How a Claim enters a key's segment when it knows none that covers the
// key: it starts one, or joins the live one (see segment.go).

// enter makes q's key covered: it starts a segment, in which case c is
// its first claim and holds at once, or it learns the live segment and
// returns c nil (q then claims in it). done reports that Claim returns
// (c, err).
func (q *claimRun) enter(ctx context.Context) (c *Claim, done bool, err error) {
	e := q.e
	if e.clock.ServerNow().Latest.Before(e.keys.snapshot(q.key).strayUntil) {
		// A segment of another history owns the buckets a start needs.
		return nil, true, &BusyError{Key: q.key}
	}
	// The store's span and history as its protocol document names them
	// now: the start's gates record the history, and count only in it.
	history, err := e.segments.confirmSpan(ctx)
	if err != nil {
		return nil, true, err
	}
	now := e.clock.ServerNow()
	seg := q.startBase(ctx, now.Earliest)
	lo, hi := e.startBuckets(now)
	// Lowest bucket first, so that a start that meets a gate leaves its
	// own gates only below it: such a gate gives nobody coverage (see the
	// package documentation).
	var docs []Doc
	for b := lo; b <= hi; b++ {
		docs = append(docs, gate(q.key, seg, b, Floor{}, now.Latest, history))
	}
	q.history = history
	c = q.newClaim(seg, seg)
	d := q.claimDoc(c, now.Latest)
	docs = append(docs, d, shadowOf(d))
	gates := len(docs) - 2
	docs, landed := e.segments.startDocs(docs, history)
	dup, err := e.store.InsertOrdered(ctx, docs)
	if landed >= 0 && dup == landed {
		dup = -1
	}
	if err == nil && (dup == -1 || dup == gates) {
		// Its gates landed: the segment is relied on only if the store
		// is still in the history they record, with this process's span.
		err = e.segments.gateOfThisHistory(ctx, docs[0])
	}
	switch {
	case err != nil:
		return q.startFailed(ctx, c, err)
	case dup == -1:
		e.keys.learnGate(q.key, docs[gates-1])
		e.keys.learnNewest(q.key, seg)
		// The first claim of a segment: nothing is below it.
		c.clear, c.strong, c.Below = true, true, true
		e.holds.confirmHead(c)
		return c, true, nil
	case dup == gates:
		// Every gate landed, and the first claim exists: this segment's
		// (an earlier start of this process, of unknown outcome).
		e.keys.learnGate(q.key, docs[gates-1])
		e.keys.learnNewest(q.key, seg)
		q.join(seg)
		q.base, q.known = seg, true
		return nil, false, nil
	case dup > gates:
		return nil, true, fmt.Errorf("the shadow of %s exists: nonces are not unique", d.ID)
	}
	return q.meet(ctx, lo+int64(dup), hi)
}

// startFailed decides what a start whose insert, of c's claim and its
// gates, failed with err gives: Claim returns err, unless the store was
// emptied meanwhile (the start goes again).
func (q *claimRun) startFailed(ctx context.Context, c *Claim, err error) (*Claim, bool, error) {
	e := q.e
	// Gates and the claim may have landed: the claim is withdrawn, and
	// this process relies on none of them (the next claim starts or
	// joins again).
	e.abandon(ctx, c)
	e.keys.dropCover(q.key, 0)
	if errors.Is(err, errOtherHistory) {
		// The store was emptied since the history was read: start
		// again in its new history (meeting these gates, if they
		// landed after the emptying).
		return nil, false, nil
	}
	return nil, true, err
}

// meet learns the live segment after a start met a gate of bucket from:
// the buckets from there to hi are owned. It is the one of the highest
// gate that still gives coverage, if that gate was sent in the store's
// history and the store's span is this process's.
func (q *claimRun) meet(ctx context.Context, from, hi int64) (c *Claim, done bool, err error) {
	e := q.e
	q.seg = 0
	for b := hi; b >= from; b-- {
		g, found, err := e.store.Get(ctx, GateID(q.key, b))
		if err != nil {
			return nil, true, err
		}
		if !found || g.Kind != KindGate || g.Seg == 0 {
			continue
		}
		if !e.clock.ServerNow().Latest.Before(e.segments.bucketEnd(b + 1).Add(-e.cfg.Margin)) {
			// Its coverage is over, but its bucket is still too recent to
			// start in: try again once the store's time moves on.
			return nil, false, nil
		}
		if err := e.segments.gateOfThisHistory(ctx, g); err != nil {
			if errors.Is(err, errOtherHistory) {
				// A start or refresh of a history before an emptying,
				// landed since: its segment is not this history's.
				e.segments.noteStray(q.key, b)
				return nil, true, &BusyError{Key: q.key}
			}
			return nil, true, err
		}
		e.keys.learnGate(q.key, g)
		q.join(g.Seg)
		return nil, false, nil
	}
	return nil, false, nil // gone since (dropped): try again
}

// join makes q claim in segment seg, knowing nothing of it yet but the
// gate just learnt, and the history it records.
func (q *claimRun) join(seg uint64) {
	q.seg, q.base, q.known, q.tip = seg, 0, false, tipRelease{}
	q.history = q.e.keys.snapshot(q.key).history
}
