package queue

import (
	"sync"
	"time"
)

// holds is what this engine remembers of its own claims' holds and ends,
// for the claims chained on its releases (tip.go): the claims whose insert
// confirmed that they hold at once, what each weighted claim's walk passed
// live when it held, which of its claims have ended, and when chained
// holds of each key last read the markers of the claims counted live
// below them. Everything in it may be dropped at any time: a claim
// forgotten only counts as live, and a head forgotten is walked. Its lock
// is held only inside its methods, which call nothing outside it.
type holds struct {
	*plant

	mu sync.Mutex
	// heads holds the nonces of claims whose insert confirmed that they
	// hold at once (the claim below them, released here, is still in the
	// store), so that the Walk which follows reads nothing.
	heads map[string]struct{}
	// heldBelow holds, by nonce, the claims that may have been live below
	// a weighted claim when it held, until it ends (tip.go).
	heldBelow map[string][]heldRef
	// endedOwn holds, by nonce, this engine's claims whose end marker
	// landed, in two generations (tip.go).
	endedOwn [2]map[string]ownEnd
	// rechecked holds, by key, when chained holds last read the end
	// markers of claims counted live below them (recheckLive).
	rechecked map[string]time.Duration
}

func newHolds(p *plant) *holds {
	return &holds{plant: p, heads: make(map[string]struct{}), heldBelow: make(map[string][]heldRef),
		endedOwn: [2]map[string]ownEnd{{}, {}}, rechecked: make(map[string]time.Duration)}
}

// ownEnd is what this engine knows of one of its claims that has ended:
// if it held, the claims that may have been live below it (known: this
// engine found it holding, so below is known).
type ownEnd struct {
	below []heldRef
	known bool
}

// confirmHead records that c holds: its insert proved every lower epoch
// ended.
func (h *holds) confirmHead(c *Claim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.heads) >= maxHeads {
		clear(h.heads)
	}
	h.heads[h.headID(c)] = struct{}{}
}

// takeHead reports (once) whether c was confirmed to hold.
func (h *holds) takeHead(c *Claim) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.heads[h.headID(c)]
	delete(h.heads, h.headID(c))
	return ok
}

// forgetHeads forgets every claim confirmed to hold at its insert, once
// the store showed that it lost some of what this engine knew (ErrReset):
// their walks read the chain instead.
func (h *holds) forgetHeads() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.heads)
}

// noteHeld records, once c holds, the claims that may be live below it
// (those its walk passed live, or those of the release it chained on
// left live), for the claim chained on its release.
func (h *holds) noteHeld(c *Claim, live []heldRef) {
	if c.Terms.Mode != Weighted {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.heldBelow) >= maxHeads {
		clear(h.heldBelow)
	}
	h.heldBelow[c.Nonce] = live
}

// takeHeld returns (once) the claims noteHeld recorded for c, if any.
func (h *holds) takeHeld(c *Claim) (live []heldRef, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	live, known = h.heldBelow[c.Nonce]
	delete(h.heldBelow, c.Nonce)
	return live, known
}

// noteEnded records that the claim with nonce has ended for good: this
// engine's own claim whose end marker landed, or (end.known false) a
// claim whose marker recheckLive found. Two generations of
// maxHeads claims are kept; a claim forgotten only counts as live.
func (h *holds) noteEnded(nonce string, end ownEnd) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.endedOwn[0]) >= maxHeads {
		h.endedOwn[1], h.endedOwn[0] = h.endedOwn[0], make(map[string]ownEnd)
	}
	h.endedOwn[0][nonce] = end
}

// endedLocked returns what noteEnded recorded of the claim with nonce;
// h.mu must be held.
func (h *holds) endedLocked(nonce string) (ownEnd, bool) {
	if end, ok := h.endedOwn[0][nonce]; ok {
		return end, true
	}
	end, ok := h.endedOwn[1][nonce]
	return end, ok
}

// stillLive returns the claims of refs that this engine has not seen
// ended (noteEnded).
func (h *holds) stillLive(refs []heldRef) []heldRef {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stillLiveLocked(refs)
}

func (h *holds) stillLiveLocked(refs []heldRef) []heldRef {
	var live []heldRef
	for _, r := range refs {
		if _, ended := h.endedLocked(r.nonce); !ended {
			live = append(live, r)
		}
	}
	return live
}

// leftLive returns, for the claim with nonce, which this engine released
// after finding it holding (known), the claims its hold left live below
// it that this engine has not seen ended since (ownReleaseStops).
func (h *holds) leftLive(nonce string) (live []heldRef, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	end, ok := h.endedLocked(nonce)
	if !ok || !end.known {
		return nil, false
	}
	return h.stillLiveLocked(end.below), true
}

// recheckDue returns the claims of refs that this engine has not seen
// ended and whose markers a chained hold of key reads now (recheckLive):
// none if every one has ended, or if they were read less than
// recheckEvery before now; none either at the first sight of key, which
// only starts the interval.
func (h *holds) recheckDue(key string, refs []heldRef, now time.Duration) []heldRef {
	h.mu.Lock()
	defer h.mu.Unlock()
	live := h.stillLiveLocked(refs)
	last, seen := h.rechecked[key]
	if len(live) == 0 || seen && now-last < recheckEvery {
		return nil
	}
	if len(h.rechecked) >= maxHeads {
		clear(h.rechecked)
	}
	h.rechecked[key] = now
	if !seen {
		return nil // the first sight starts the interval: no read yet
	}
	return live
}
