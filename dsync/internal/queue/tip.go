package queue

import (
	"context"
	"time"
)

// Chained holds: a claim inserted right above a claim this process
// released carries that claim's shadow again (see Claim); the shadow's
// duplicate key proves the released claim still in the store, and this
// process knows what that claim's hold proved, since it found it holding.
// What a walk down to the release would have concluded, the insert then
// concludes without a read (issue 44):
//
//   - a release whose claim held with every lower claim ended (Clear)
//     ends every walk: the claim above holds, whatever its terms;
//   - a release of a shared claim ends a shared walk (stopsAt): a reader
//     that reads again right after its own read unlock holds at once;
//   - a release of a weighted claim ends no walk by itself (it does not
//     say how much weight was live below it), but the engine that found
//     the claim holding knows the live claims its walk passed. The live
//     claims below it are those or fewer since: claims below an existing
//     epoch are never inserted (F1, F3), only ended; and those of them
//     this engine has ended itself since (endedOwn) are no longer live. A
//     weighted claim of the same limit right above it holds at once when
//     the weights of the rest and its own fit the limit.
//
// Only the engine that found a weighted claim holding knows what it
// passed (heldBelow): a claim rebuilt by Resume whose hold this engine
// does not remember proves nothing for a weighted claim above it.
//
// If none of those claims is left, the new claim holds with every lower
// claim ended, as its walk would have found: its release is Clear, and
// it vouches for the key's floor (floor.go). Without that, a process
// whose holds mostly chain (its goroutines cycling one semaphore) almost
// never made a Clear release: walks read thousands of epochs, down to
// the segment's first. For the same reason a walk
// of this process's stops at such a release of its own, as at a Clear
// one (ownReleaseStops): where holds always overlap, no release is Clear
// for hundreds of epochs, and every walk went down to the last one.

// heldRef is a live claim a weighted claim's walk passed: its epoch and
// nonce (which name its end marker), and its weight.
type heldRef struct {
	epoch  uint64
	nonce  string
	weight int64
	// d is the claim's document, as the walk read it: a walk that stops
	// at the release above it counts it as passed (ownReleaseStops).
	d Doc
}

// tipRelease is a release this process made, with what its claim's hold
// proves for the claim above it.
type tipRelease struct {
	Doc         // the release marker
	terms Terms // its claim's
	// below are the claims that may have been live below the claim when
	// it held: those its walk passed live, or, for a claim chained on a
	// release, those of that release left live. belowKnown: this engine
	// found the claim holding, so below is known.
	below      []heldRef
	belowKnown bool
}

// tipProves reports whether a claim with terms w, inserted right above
// t's claim by an insert that proved that claim still stored, holds at
// once by the grant rule; strong: every lower claim has ended (Clear).
// live are then the claims below it that may be live, and strong is
// true when there are none. (The engine asks it through
// Engine.tipProves.)
func (h *holds) tipProves(w Terms, t tipRelease) (ok, strong bool, live []heldRef) {
	switch {
	case t.Clear:
		return true, true, nil
	case w.Mode == Shared && t.terms.Mode == Shared:
		return true, false, nil
	case chainsWeighted(w, t):
		live = h.stillLive(t.below)
		var sum int64
		for _, r := range live {
			sum += max(r.weight, 0)
		}
		return sum <= w.Limit-w.Weight, len(live) == 0, live
	}
	return false, false, nil
}

// chainsWeighted reports whether a weighted claim with terms w chains on
// t, a release of a weighted claim of the same limit whose hold this
// engine found (so it knows the claims that hold passed live).
func chainsWeighted(w Terms, t tipRelease) bool {
	return w.Mode == Weighted && t.terms.Mode == Weighted && t.terms.Limit == w.Limit && t.belowKnown
}

// passedRefs are the live claims c's walk passed.
func passedRefs(c *Claim) []heldRef {
	refs := make([]heldRef, 0, len(c.passed))
	for _, p := range c.passed {
		refs = append(refs, heldRef{epoch: p.d.Epoch, nonce: p.d.Nonce, weight: p.d.Weight, d: p.d})
	}
	return refs
}

// ownReleaseStops reports whether the release of claim d, read by a
// walk of c, ends c's walk: this engine released d after finding it
// holding, so it knows the claims that may have been live below d when
// it held (claims below an existing epoch are never inserted, only
// ended: F1, F3), and
//
//   - it has ended since every one of them: every claim up to d has
//     ended, as a Clear release says, and every walk stops there;
//   - or c is weighted with d's limit, so it passes each of them: c's
//     walk stops there too, and below returns them (those this engine
//     has not seen ended), which c counts as passed, live unless a read
//     of their markers shows them ended (full), as its walk would have
//     found them, without reading the ended claims in between.
//
// A walk below this process's own weighted releases then stops at the
// first, not at the last Clear release (which, with holds that always
// overlap, lies far down: the walks of 8 goroutines cycling one
// semaphore read hundreds of epochs each; and a process whose waiters
// cycle a semaphore beside a unit another process keeps for good, as
// the bench's handoffs do, read two documents per claim since that
// unit's, on every Acquire).
func (e *Engine) ownReleaseStops(c *Claim, d Doc) (below []heldRef, stops bool) {
	floor := e.keys.floorOf(c.Key, c.Seg).Epoch
	live, known := e.holds.leftLive(d.Nonce)
	if !known {
		return nil, false
	}
	if e.leftNoneLive(live) {
		return nil, true
	}
	for _, r := range live {
		// Below the key's floor a claim may have been pruned, its
		// marker with it, and would count live for good: the walk goes
		// on down to the floor instead, which says it ended. At or
		// above the floor this process knows (while it relies on the
		// segment, at least that of any gate a prune relied on:
		// floor.go), nothing was pruned.
		if r.d.Epoch != r.epoch || r.d.Nonce != r.nonce || r.epoch < floor || !passes(c.Terms, r.d) {
			return nil, false
		}
	}
	return live, true
}

// recheckEvery bounds how often chained holds read the end markers of the
// claims their release left live (recheckLive): by time, not by count,
// so that at any rate of holds the reads stay a small, bounded share.
const recheckEvery = time.Second

// recheckLive reads, by ID, the end markers of the claims of refs (below
// the release a weighted claim of key chained on) that this engine has
// not seen ended, at most once per recheckEvery per key (the first
// chained hold of a key starts the interval), and records
// those found ended, up to the first not found. Without it a process never learns that another's
// claim its walk passed has ended while its holds keep chaining: they
// never hold Below, its releases are never Clear, and its floor stops.
// A marker found proves an end; one not found (or a read that failed)
// proves nothing: the claim still counts as live. So a claim below the
// floor this process knows is taken for ended, unread, if that floor
// counts (floorCounts; the same judgement as a walk's stop at a floor):
// a prune may have deleted its marker with it, and read top-down it
// would stay counted live for good, the holds chained above it would
// never hold Below again, and the floor would stop rising.
func (e *Engine) recheckLive(ctx context.Context, key string, refs []heldRef) {
	live := e.holds.recheckDue(key, refs, e.clock.Mono())
	counted := map[Floor]bool{} // floors read in this recheck, and whether they count
	for _, r := range live {
		if f := e.keys.floorOf(key, r.d.Seg); r.d.Epoch == r.epoch && r.epoch < f.Epoch {
			// Below the floor this process knows (a chained hold relies
			// on the segment): ended, if the floor counts, and perhaps
			// pruned with its marker, which would never be found.
			counts, read := counted[f]
			if !read {
				_, ok, err := e.rd.floorCounts(ctx, key, f)
				counts = err == nil && ok
				counted[f] = counts
			}
			if counts {
				e.holds.noteEnded(r.nonce, ownEnd{})
				continue
			}
		}
		if !e.endFound(ctx, key, r) {
			// A claim still live keeps the holds chained above it from
			// holding Below whatever the others' markers say: read on
			// at the next look. So a key with claims of other processes
			// that stay live costs one read per recheckEvery, not one
			// per such claim (64 live units: 63 reads a second).
			return
		}
		e.holds.noteEnded(r.nonce, ownEnd{})
	}
}
