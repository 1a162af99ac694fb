package chain

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
//     the claim holding knows the weight of the live claims its walk
//     passed. The claims below it are those or fewer since: claims below
//     an existing epoch are never inserted (F1, F3), only ended. A
//     weighted claim of the same limit right above it holds at once when
//     that weight and its own fit the limit.
//
// Only the engine that found a weighted claim holding knows what it
// passed (heldBelow): a claim rebuilt by Resume whose hold this engine
// does not remember proves nothing for a weighted claim above it.

// tipRelease is a release this process made, with what its claim's hold
// proves for the claim above it.
type tipRelease struct {
	Doc         // the release marker
	terms Terms // its claim's
	// below is the weight of the live weighted claims the claim's walk
	// passed when it held; belowKnown: this engine found it holding, so
	// below is known.
	below      int64
	belowKnown bool
}

// tipProves reports whether a claim with terms w, inserted right above
// t's claim by an insert that proved that claim still stored, holds at
// once by the grant rule; strong: every lower claim had ended (Clear).
// below is then the weight of the live weighted claims below it.
func (e *Engine) tipProves(w Terms, t tipRelease) (ok, strong bool, below int64) {
	switch {
	case t.Clear:
		return true, true, 0
	case e.has(BugTipAnyMode):
		return true, false, 0
	case w.Mode == Shared && t.terms.Mode == Shared:
		return true, false, 0
	case w.Mode == Weighted && t.terms.Mode == Weighted && t.terms.Limit == w.Limit && t.belowKnown:
		if e.has(BugTipWeightIgnored) {
			return true, false, 0
		}
		return t.below <= w.Limit-w.Weight, false, t.below
	}
	return false, false, 0
}

// noteHeld records, once c holds, the weight of the live weighted claims
// its walk passed (below), for the claim chained on its release.
func (e *Engine) noteHeld(c *Claim, below int64) {
	if c.Terms.Mode != Weighted {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.heldBelow) >= maxHeads {
		clear(e.heldBelow)
	}
	e.heldBelow[c.Nonce] = below
}

// takeHeld returns (once) the weight noteHeld recorded for c, if any.
func (e *Engine) takeHeld(c *Claim) (below int64, known bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	below, known = e.heldBelow[c.Nonce]
	delete(e.heldBelow, c.Nonce)
	return below, known
}

// passedWeight is the weight of the live claims c passed.
func passedWeight(c *Claim) int64 {
	var sum int64
	for _, p := range c.passed {
		sum += max(p.d.Weight, 0)
	}
	return sum
}
