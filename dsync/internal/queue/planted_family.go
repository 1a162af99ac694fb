package queue

import "context"

// Planted errors of the grant rule's modes and limits, for the
// simulation's negative controls (see Bug). They are numbered apart from
// the engine's own, which grow from the other end.
const (
	// BugLimitIgnored lets a weighted claim pass live weighted claims of
	// any limit, as if the limit were the key's: a claim of a large limit
	// then holds beside claims of a small one with more weight than the
	// small limit allows.
	BugLimitIgnored Bug = 64 + iota
	// BugOnceStaleRead skips the read of a Once's done record under its
	// hold and trusts the read before the claim: two runs that both read
	// "not done" before claiming both run, one after the other.
	BugOnceStaleRead
	// BugReadersPassWaitingWriters lets a shared claim pass a live
	// exclusive claim that is still waiting (the claim below it is live):
	// readers preferred over a waiting writer, which then holds beside
	// them once the claims below it end.
	BugReadersPassWaitingWriters
	// BugWeightedFirstFit counts, below a weighted walker, only the claims
	// that would hold were each judged in queue order against the claims
	// counted so far (first fit): a small claim goes ahead of a larger one
	// waiting for room, as a semaphore without FIFO lets it, and the
	// larger one can wait for ever behind a stream of small ones.
	BugWeightedFirstFit
)

// plantedPasses is passes as a planted error of this file changes it; ok
// is false when none is planted.
func (j *judge) plantedPasses(ctx context.Context, w Terms, d Doc) (p, ok bool) {
	switch {
	case j.has(BugLimitIgnored) && w.Mode == Weighted:
		return d.Mode == Weighted, true
	case j.has(BugReadersPassWaitingWriters) && w.Mode == Shared && d.Mode == Exclusive && d.Epoch > 1:
		below, found, err := j.store.Get(ctx, ClaimID(d.Key, d.Epoch-1))
		if err != nil || !found {
			return false, true
		}
		ended, _, _, _, err := j.ended(ctx, below)
		return err == nil && !ended, true
	}
	return false, false
}

// plantedFits is fits as a planted error of this file changes it; ok is
// false when none is planted.
func (p *plant) plantedFits(w Terms, passed []passedClaim) (f, ok bool) {
	if !p.has(BugWeightedFirstFit) || w.Mode != Weighted {
		return false, false
	}
	var held int64
	for i := len(passed) - 1; i >= 0; i-- { // passed runs down the queue
		if wt := passed[i].d.Weight; wt <= w.Limit-held {
			held += wt
		}
	}
	return w.Weight <= w.Limit-held, true
}
