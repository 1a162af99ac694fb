package chain

import (
	"context"
	"errors"
	"slices"
)

// Head returns the claim at the head of key's queue: the lowest claim that
// has not ended, where every claim below it has. found is false when every
// claim has ended (or the key has none). The head may not know yet that it
// holds, and may still withdraw; but what Head reports never goes back to
// a lower epoch, because ends are permanent and the walk stops at the
// floor, below which a late insert may land. (A store emptied or restored
// starts the key's history again, and its epochs with it.)
func (e *Engine) Head(ctx context.Context, key string) (head Doc, found bool, err error) {
	q, err := e.Queue(ctx, key)
	if err != nil || len(q) == 0 {
		return Doc{}, false, err
	}
	return q[0], true, nil
}

// Queue returns the claims of key that have not ended, lowest first, from
// its head (see Head) up. It reads by ID only: the gate that covers the
// key now (its segment and floor), the newest claim above the floor
// (floor.go), and down from there until it knows everything below has
// ended.
func (e *Engine) Queue(ctx context.Context, key string) ([]Doc, error) {
	g, ok, err := e.liveSegment(ctx, key)
	if err != nil || !ok {
		return nil, err // no segment anyone may rely on: nothing holds
	}
	seg, floor := g.Seg, g.Floor
	if ks := e.snapshot(key); ks.seg == seg || ks.seg == 0 {
		e.learnGate(key, g) // what covers the key now, for this process's claims too
	}
	d, ok, err := e.newest(ctx, key, seg, floor)
	if errors.Is(err, errFloorStray) {
		// A gate of a store's earlier history: no claim of the segment
		// can hold until a floor that counts covers it.
		return nil, nil
	}
	if err != nil || !ok || d.Epoch < seg {
		return nil, err
	}
	top := d.Epoch
	var live []Doc // unended claims found, highest first
	for {
		ended, kind, marker, _, err := e.ended(ctx, d)
		if err != nil {
			return nil, err
		}
		if !ended {
			live = append(live, d)
		} else if kind == KindRelease && stopsAll(d, marker) {
			break
		}
		if d.Epoch <= max(seg, floor.Epoch) {
			break // below the floor (or the segment's first epoch) everything has ended
		}
		next, ok, err := e.store.Get(ctx, ClaimID(key, d.Epoch-1))
		if err != nil {
			return nil, err
		}
		if !ok {
			// A missing claim above the floor: not pruned, but a gap in a
			// store that lost the key's history, and the claims above it
			// never hold (see gap.go): the head is below it.
			if next, ok, err = e.claimBelow(ctx, key, d.Epoch-1, seg); err != nil || !ok {
				return nil, err
			}
			live, top = live[:0], next.Epoch
		}
		d = next
	}
	if len(live) > 0 && live[len(live)-1].Epoch < top {
		// A claim below the top read as live may have lost its marker to
		// a prune that ran after its claim was read; the prune relied on a
		// gate whose floor lies above it, which the covering gate read now
		// shows.
		if g, ok, err := e.liveSegment(ctx, key); err != nil {
			return nil, err
		} else if ok && g.Seg == seg {
			for len(live) > 0 && live[len(live)-1].Epoch < g.Floor.Epoch {
				live = live[:len(live)-1]
			}
		}
	}
	slices.Reverse(live)
	return live, nil
}

// liveSegment returns the gate that covers key now: the highest gate,
// among the buckets around the store's time, whose coverage has not ended
// by the earliest possible store time; it names the segment a process may
// rely on, and the key's floor. found is false when no segment is
// covered: the key is idle.
func (e *Engine) liveSegment(ctx context.Context, key string) (g Doc, found bool, err error) {
	now := e.clock.ServerNow()
	for b := e.bucket(now.Latest) + 1; b >= e.bucket(now.Earliest)-1; b-- {
		if !now.Earliest.Before(e.bucketEnd(b + 1).Add(-e.cfg.Margin)) {
			break
		}
		g, ok, err := e.store.Get(ctx, GateID(key, b))
		if err != nil {
			return Doc{}, false, err
		}
		if ok && g.Kind == KindGate && g.Seg != 0 {
			return g, true, nil
		}
	}
	return Doc{}, false, nil
}
