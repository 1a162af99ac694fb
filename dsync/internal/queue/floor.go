package queue

import (
	"context"
	"errors"
	"fmt"
)

// A key's floor says that every epoch of its segment below it has ended.
// It lives in the key's gates, one per bucket of store time (segment.go):
// each gate records a floor at least that of the gate of the bucket
// before it (its inserter knows that gate), so a segment's floors only
// rise with their buckets, and the floor of the highest gate a process
// knows is the highest it needs. A process learns floors from the gates
// it inserts or reads, and vouches for one itself when a claim of its
// holds with every lower claim ended (own): the gates it inserts record
// the higher of the two.
//
// Three rules rest on it (see the package documentation for why):
//
//   - A claim is inserted above the floor of the gate that covers its
//     segment, never at or below it; an insert that the coverage known
//     around it cannot prove so is given up (claimrun.go).
//   - A walk stops below the floor: every epoch there has ended.
//   - Only epochs below the floor of a gate of bucket b are pruned, and
//     only once the store's time is PruneDelay past the start of bucket
//     b+1 (claim.go: prune): by then every process that relies on the segment
//     knows a gate of bucket b or later, whose floor is at least as high.
//
// A floor counts only while its claim exists with its nonce: a gate that
// landed after the store was emptied may carry a floor of the history
// before, whose claim the new history does not have.

// errFloorStray: the floor of the gate that covers the key's segment names
// a claim the store does not hold; claims of the segment wait until the
// store shows a floor that counts, or the segment lapses.
var errFloorStray = errors.New("the key's floor names a claim the store does not hold")

// floorCounts reports whether floor f of key counts: its claim exists with
// its nonce. A floor without a nonce was recorded by a process that knew
// only its epoch existed.
func (r *reader) floorCounts(ctx context.Context, key string, f Floor) (Doc, bool, error) {
	d, found, err := r.Get(ctx, ClaimID(key, f.Epoch))
	if err != nil {
		return Doc{}, false, err
	}
	return d, found && d.Kind == KindClaim && (f.Nonce == "" || d.Nonce == f.Nonce), nil
}

// newest returns the newest claim of key's segment seg it can find with
// reads by ID: from the claim of the floor f (or of the segment's first
// epoch, without a floor), it gallops up, doubling its steps until a
// claim is missing, then halves between the highest found and the lowest
// missing. Claims above the floor are never pruned, so they run without a
// hole up to the newest (but where the store lost its history). found is
// false if the segment has no claim. Nothing rests on it being the
// newest: a claim inserted above it follows an epoch seen to exist (F1),
// and a duplicate key sends the next insert higher.
//
// A floor at the segment's first epoch counts only if its claim exists,
// as any floor: a missing one is not a segment without claims. A Claim
// may insert only above the floor (floorBars), so taking it for one
// would have each round read the first epoch again, find nothing, and
// try the next round: a Claim in a segment known from before an emptying
// kept reading that epoch, and never inserted, until the segment's
// coverage ran out (found by the public-API simulation's outages).
func (r *reader) newest(ctx context.Context, key string, seg uint64, f Floor) (Doc, bool, error) {
	start := max(seg, 1)
	if f.Epoch >= start {
		d, counts, err := r.floorCounts(ctx, key, f)
		if err != nil {
			return Doc{}, false, err
		}
		if !counts {
			return Doc{}, false, fmt.Errorf("%w: %q epoch %d", errFloorStray, key, f.Epoch)
		}
		return r.climb(ctx, key, d)
	}
	d, found, err := r.Get(ctx, ClaimID(key, start))
	if err != nil || !found {
		return Doc{}, false, err
	}
	return r.climb(ctx, key, d)
}

// climb returns the highest claim above the existing claim d that it
// reaches by galloping and halving (see newest). On an error it returns
// the highest claim it had reached (d at least) with the error: that
// claim exists, so a caller may keep it as a base (F1), and a Claim cut
// short by its bound does not start its next climb from the bottom
// again (on a slow store, a climb longer than the bound would otherwise
// never end, and the claim never land).
func (r *reader) climb(ctx context.Context, key string, d Doc) (Doc, bool, error) {
	found := d
	missing := uint64(0) // the lowest epoch known missing (0: none yet)
	// probe reads epoch x and moves found up to it, or missing down.
	probe := func(x uint64) error {
		next, ok, err := r.Get(ctx, ClaimID(key, x))
		switch {
		case err != nil:
			return err
		case ok && next.Kind == KindClaim:
			found = next
		default:
			missing = x
		}
		return nil
	}
	for step := uint64(1); missing == 0; step *= 2 {
		if err := probe(found.Epoch + step); err != nil {
			return found, true, err
		}
	}
	for missing-found.Epoch > 1 {
		if err := probe(found.Epoch + (missing-found.Epoch)/2); err != nil {
			return found, true, err
		}
	}
	return found, true, nil
}
