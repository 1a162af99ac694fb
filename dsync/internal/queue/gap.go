package queue

import "context"

// A gap is a missing claim with no floor that counts above it: pruning
// did not make it. It appears when the store lost the key's history while
// processes that knew it were still claiming: a claim inserted above what
// the store still holds (it followed an epoch the store no longer has)
// sits over a run of missing epochs. Such a claim never holds — its walk
// finds the gap, and its owner gives it up (ErrReset) — but it stays, and
// whoever starts from the key's newest claim lands above it too. So a
// claimer that found a gap starts below it instead: at the highest claim
// that exists under the gap, found with point reads (galloping down, then
// halving), and its insert fills the gap from below. The key's history is
// contiguous again once the new claims reach the stray ones.

// claimBelow returns the highest claim of key below epoch whose next epoch
// is missing: the end of the contiguous history under a gap (or of a
// stray run inside it, which the next walk finds and steps below). It
// reads by ID only: galloping down from epoch to seg, the first epoch of
// its segment, then halving.
func (r *reader) claimBelow(ctx context.Context, key string, epoch, seg uint64) (Doc, bool, error) {
	seg = max(seg, 1)
	missing := epoch // known missing (or the gap's top)
	var found Doc
	for step := uint64(1); ; step *= 2 {
		x := seg
		if missing > seg+step {
			x = missing - step
		}
		d, ok, err := r.Get(ctx, ClaimID(key, x))
		if err != nil {
			return Doc{}, false, err
		}
		if ok {
			found = d
			break
		}
		missing = x
		if x == seg {
			return Doc{}, false, nil // not even the segment's first: nothing below
		}
	}
	for missing-found.Epoch > 1 {
		x := found.Epoch + (missing-found.Epoch)/2
		d, ok, err := r.Get(ctx, ClaimID(key, x))
		if err != nil {
			return Doc{}, false, err
		}
		if ok {
			found = d
		} else {
			missing = x
		}
	}
	return found, true, nil
}
