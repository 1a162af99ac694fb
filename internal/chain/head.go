package chain

import (
	"context"
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
// its head (see Head) up.
func (e *Engine) Queue(ctx context.Context, key string) ([]Doc, error) {
	seg, ok, err := e.liveSegment(ctx, key)
	if err != nil || !ok {
		return nil, err // no segment anyone may rely on: nothing holds
	}
	floor, err := e.headFloor(ctx, key, seg, 0)
	if err != nil {
		return nil, err
	}
	d, ok, err := e.store.Newest(ctx, key)
	if err != nil || !ok || d.Epoch < seg {
		return nil, err
	}
	top := d.Epoch
	if floor > top {
		// A floor above every claim is a stray from a store's earlier
		// history (see countingFloor).
		if floor, err = e.headFloor(ctx, key, seg, top); err != nil {
			return nil, err
		}
	}
	var live []Doc // unended claims found, highest first
	for d.Epoch >= max(floor, seg) {
		ended, kind, marker, _, err := e.ended(ctx, d)
		if err != nil {
			return nil, err
		}
		if !ended {
			live = append(live, d)
		} else if kind == KindRelease && stopsAll(d, marker) {
			break
		}
		if d.Epoch == seg {
			break
		}
		next, ok, err := e.store.Get(ctx, ClaimID(key, d.Epoch-1))
		if err != nil {
			return nil, err
		}
		if !ok {
			// A missing claim: pruned (everything below has ended) if a
			// floor that counts lies above it; otherwise a gap in a store
			// that lost the key's history, and the claims above it never
			// hold (see gap.go): the head is below it.
			pruned, err := e.floorAbove(ctx, key, seg, d.Epoch-1)
			if err != nil {
				return nil, err
			}
			if pruned {
				break
			}
			if next, ok, err = e.claimBelow(ctx, key, d.Epoch-1, seg); err != nil || !ok {
				return nil, err
			}
			live, top = live[:0], next.Epoch
		}
		d = next
	}
	if len(live) > 0 && live[len(live)-1].Epoch < top {
		// A claim below the top read as live may have lost its marker to
		// a prune that ran after its claim was read; the prune raised the
		// floor first, so a floor read now tells.
		if floor, err = e.headFloor(ctx, key, seg, top); err != nil {
			return nil, err
		}
		for len(live) > 0 && live[len(live)-1].Epoch < floor {
			live = live[:len(live)-1]
		}
	}
	slices.Reverse(live)
	return live, nil
}

// headFloor reads key's highest floor; with top set, one above top (no
// claim that exists lies under it) is replaced by the highest that counts.
func (e *Engine) headFloor(ctx context.Context, key string, seg, top uint64) (uint64, error) {
	f, _, err := e.readFloor(ctx, key, seg)
	if err != nil || top == 0 || f.Epoch <= top {
		return f.Epoch, err
	}
	cf, err := e.countingFloor(ctx, key, seg)
	return cf.Epoch, err
}

// liveSegment returns the segment of key that a process may rely on now:
// that of the highest gate, among the buckets around the store's time,
// whose coverage has not ended by the earliest possible store time.
// found is false when no segment is covered: the key is idle.
func (e *Engine) liveSegment(ctx context.Context, key string) (seg uint64, found bool, err error) {
	now := e.clock.ServerNow()
	for b := e.bucket(now.Latest) + 1; b >= e.bucket(now.Earliest)-1; b-- {
		if !now.Earliest.Before(e.bucketEnd(b + 1).Add(-e.cfg.Margin)) {
			break
		}
		g, ok, err := e.store.Get(ctx, GateID(key, b))
		if err != nil {
			return 0, false, err
		}
		if ok && g.Kind == KindGate && g.Seg != 0 {
			return g.Seg, true, nil
		}
	}
	return 0, false, nil
}
