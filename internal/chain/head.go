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
	floor, err := e.headFloor(ctx, key, 0)
	if err != nil {
		return nil, err
	}
	d, ok, err := e.store.Newest(ctx, key)
	if err != nil || !ok {
		return nil, err
	}
	top := d.Epoch
	if floor > top {
		// A floor above every claim is a stray from a store's earlier
		// history (see countingFloor).
		if floor, err = e.headFloor(ctx, key, top); err != nil {
			return nil, err
		}
	}
	var live []Doc // unended claims found, highest first
	for d.Epoch >= max(floor, 1) {
		ended, kind, marker, _, err := e.ended(ctx, d)
		if err != nil {
			return nil, err
		}
		if !ended {
			live = append(live, d)
		} else if kind == KindRelease && stopsAll(d, marker) {
			break
		}
		if d.Epoch == 1 {
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
			pruned, err := e.floorAbove(ctx, key, d.Epoch-1)
			if err != nil {
				return nil, err
			}
			if pruned {
				break
			}
			if next, ok, err = e.claimBelow(ctx, key, d.Epoch-1); err != nil || !ok {
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
		if floor, err = e.headFloor(ctx, key, top); err != nil {
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
func (e *Engine) headFloor(ctx context.Context, key string, top uint64) (uint64, error) {
	f, _, err := e.readFloor(ctx, key)
	if err != nil || top == 0 || f.Epoch <= top {
		return f.Epoch, err
	}
	cf, err := e.countingFloor(ctx, key)
	return cf.Epoch, err
}
