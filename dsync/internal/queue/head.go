package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// queues reads a key's queue for those who look at it (Head, Queue,
// QueueRead): with the engine's parts, and none of its own state.
type queues struct {
	clock    Times
	keys     *keys
	segments *segments
	judge    *judge
	rd       *reader
}

// Head returns the claim at the head of key's queue: the lowest claim that
// has not ended, where every claim below it has. found is false when every
// claim has ended (or the key has none). The head may not know yet that it
// holds, and may still withdraw; but what Head reports never goes back to
// a lower epoch, because ends are permanent and the walk stops at the
// floor, below which a late insert may land. (A store emptied or restored
// starts the key's history again, and its epochs with it.)
func (v *queues) Head(ctx context.Context, key string) (head Doc, found bool, err error) {
	q, err := v.Queue(ctx, key)
	if err != nil || len(q) == 0 {
		return Doc{}, false, err
	}
	return q[0], true, nil
}

// Queue returns the claims of key that have not ended, lowest first, from
// its head (see Head) up. It reads by ID only: the gate that covers the
// key now (its segment and floor), the newest claim above the floor
// (floor.go), and down from there until it knows everything below has
// ended; then the covering gate again. Pruning deletes only below a
// floor, and a prune that ran while the reads went on relied on a gate no
// later than the one read last (see the package documentation), so a
// claim read as live below that gate's floor may have lost its marker to
// it: it is dropped, and if the floor rose past every claim read, the
// reads are made again.
func (v *queues) Queue(ctx context.Context, key string) ([]Doc, error) {
	return v.queue(ctx, key, v.clock.ServerNow, true)
}

// QueueRead is Queue for reads that must write nothing and teach the
// engine nothing (a Client's Queue and List, an election's Leader, dsync
// status): it reads the same documents, under the gate that covers the
// key by now, the caller's clock (which may be a read-only sample, such
// as one taken with hello behind a mongos, and is not the engine's), and
// returns every claim found without an end marker, whether or not its
// session has expired. Queue instead ends such a claim with a dead marker
// judged by the engine's clock; a read cannot judge that (its clock may
// be off the one that orders the writes) and must not, since a marker
// inserted wrongly ends a live claim. Nor does it record the gates it
// read, or the sessions it found missing, as Queue does.
func (v *queues) QueueRead(ctx context.Context, key string, now func() Interval) ([]Doc, error) {
	return v.queue(ctx, key, now, false)
}

// queue is Queue (judge: claims without a marker are judged by their
// session, and marked dead once it expired; the gate read is learnt) and
// QueueRead (not judge: nothing is written or learnt).
func (v *queues) queue(ctx context.Context, key string, now func() Interval, judge bool) ([]Doc, error) {
	for attempt := 0; ; attempt++ {
		g, ok, err := v.segments.liveSegmentAt(ctx, key, now())
		if err != nil || !ok {
			return nil, err // no segment anyone may rely on: nothing holds
		}
		if judge {
			v.learnCovering(key, g)
		}
		live, top, err := v.queueFrom(ctx, key, g, judge)
		if err != nil || top == 0 {
			return nil, err
		}
		after, ok, err := v.segments.liveSegmentAt(ctx, key, now())
		if err != nil {
			return nil, err
		}
		switch {
		case ok && after.Seg == g.Seg && after.Floor.Epoch <= top:
			for len(live) > 0 && live[0].Epoch < after.Floor.Epoch {
				live = live[1:]
			}
			return live, nil
		case attempt == 2:
			// The key moved on faster than three reads of its queue: what
			// they found is no longer the queue.
			return nil, fmt.Errorf("%q: the queue changed under three reads of it", key)
		}
	}
}

// learnCovering learns g, the gate that covers key now, if it is of the
// segment this process relies on for key, as known in the store's
// history g was written in.
func (v *queues) learnCovering(key string, g Doc) {
	if ks := v.keys.snapshot(key); ks.seg == g.Seg && v.segments.sameKnown(ks.history, g.Nonce) {
		// What covers the key now, for this process's claims too. A
		// segment it does not rely on yet (nor one of the same number
		// that it knew in another history of the store) it learns only
		// by a start or a join, which check that the store's span is
		// this process's, and its history the gate's (span.go).
		v.keys.learnGate(key, g)
	}
}

// queueFrom reads key's queue under gate g: its claims that have not
// ended, lowest first, and the epoch of the newest claim it started from
// (0: none; the queue is then empty). Without judge, a claim has ended
// only by its end marker (markedEnded): nothing is written.
func (v *queues) queueFrom(ctx context.Context, key string, g Doc, judge bool) (live []Doc, top uint64, err error) {
	seg, floor := g.Seg, g.Floor
	d, ok, err := v.rd.newest(ctx, key, seg, floor)
	if errors.Is(err, errFloorStray) {
		// A gate of a store's earlier history: no claim of the segment
		// can hold until a floor that counts covers it.
		return nil, 0, nil
	}
	if err != nil || !ok || d.Epoch < seg {
		return nil, 0, err
	}
	top = d.Epoch
	for {
		ended, stops, err := v.endedAt(ctx, d, judge)
		if err != nil {
			return nil, 0, err
		}
		if !ended {
			live = append(live, d)
		} else if stops {
			break
		}
		if d.Epoch <= max(seg, floor.Epoch) {
			break // below the floor (or the segment's first epoch) everything has ended
		}
		next, gap, ok, err := v.claimUnder(ctx, key, d, seg)
		if err != nil || !ok {
			return nil, 0, err
		}
		if gap {
			live = live[:0]
		}
		d = next
	}
	slices.Reverse(live)
	return live, top, nil
}

// endedAt reports whether claim d has ended (judged by its session too
// with judge, else by its end marker alone), and whether its end stops
// the read: a release of a claim that held, below which every claim
// has ended.
func (v *queues) endedAt(ctx context.Context, d Doc, judge bool) (ended, stops bool, err error) {
	var kind string
	var marker Doc
	if judge {
		ended, kind, marker, _, err = v.judge.ended(ctx, d)
	} else {
		ended, kind, marker, err = v.judge.markedEnded(ctx, d)
	}
	if err != nil {
		return false, false, err
	}
	return ended, ended && kind == KindRelease && stopsAll(d, marker), nil
}

// claimUnder returns the claim the read of key's queue goes on with
// below d, in segment seg: the epoch right below, or, where that is
// missing (gap), the highest claim under it; ok is false when there is
// none.
func (v *queues) claimUnder(ctx context.Context, key string, d Doc, seg uint64) (next Doc, gap, ok bool, err error) {
	next, ok, err = v.rd.Get(ctx, ClaimID(key, d.Epoch-1))
	if err != nil {
		return Doc{}, false, false, err
	}
	if ok {
		return next, false, true, nil
	}
	// A missing claim above the floor: not pruned, but a gap in a
	// store that lost the key's history, and the claims above it
	// never hold (see gap.go): the head is below it.
	next, ok, err = v.rd.claimBelow(ctx, key, d.Epoch-1, seg)
	return next, true, ok, err
}
