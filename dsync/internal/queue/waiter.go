package queue

// What a waiter asks of its claim between walks: the claims it waits for
// (WaitsFor), how many of their units must end before a walk can find it
// room (Shortfall), and which of them it heard end (Suspect).

// WaitsFor returns the claims a waiter of c waits for, after a Walk found
// c blocked by b: b itself, or, when b is one of the live claims weighted
// c passed and c has no room beside them, every one of those, since the
// end of any of them can make room.
func (c *Claim) WaitsFor(b Blocker) []Blocker {
	room := false
	for _, p := range c.passed {
		room = room || p.d.Epoch == b.Epoch
	}
	if !room || len(c.passed) < 2 {
		return []Blocker{b}
	}
	out := make([]Blocker, len(c.passed))
	for i, p := range c.passed {
		out[i] = p.b
	}
	return out
}

// Shortfall is, for a waiter of c that WaitsFor several claims (the live
// weighted claims it passed, which leave it no room), how many of their
// units must end before c can fit beside the rest: until the ends it
// heard of add up to that many units, no walk of c can find it room,
// so a waiter need not look (a look finds what it finds: an end heard of
// is only ever a hint). It is 1 when c waits for one claim.
func (c *Claim) Shortfall(waitsFor []Blocker) int64 {
	if len(waitsFor) < 2 || c.Terms.Mode != Weighted {
		return 1
	}
	need := c.Terms.Weight - c.Terms.Limit
	for _, b := range waitsFor {
		need += max(b.Terms.Weight, 0)
	}
	return max(need, 1)
}

// Suspect tells c's next walk which of the live claims it passed may
// have ended since (their ends were heard of): it reads their markers
// first, all at once, before the others (walkread.go: readSuspects). Only the order and
// batching of reads change: what a walk concludes, it concludes on its
// reads.
func (c *Claim) Suspect(epochs []uint64) {
	c.suspects = append(c.suspects[:0], epochs...)
}
