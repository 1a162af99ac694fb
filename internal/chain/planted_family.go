package chain

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
)

// plantedPasses is passes as a planted error of this file changes it; ok
// is false when none is planted.
func (e *Engine) plantedPasses(w Terms, d Doc) (p, ok bool) {
	if e.has(BugLimitIgnored) && w.Mode == Weighted {
		return d.Mode == Weighted, true
	}
	return false, false
}
