package apisim

import (
	"fmt"
	"time"
)

// CheckTokens: "the epoch number is the hold's fencing token: it strictly
// increases from hold to hold of a key and is never reused", for holds
// that exclude each other (a writer's "is larger than that of every hold
// that began before it, and smaller than that of every hold that begins
// after it"; readers' and a semaphore's tokens are ordered only against
// the claims that exclude them; with the read linger on, "the value's
// read holds share a token", one after another, and no other holds do); across an emptying of the collections,
// "above the tokens handed out more than two seconds before" (the
// memory store's time has no error bound: emptyingGap).
func CheckTokens(h *History) []Violation { return checkTokens(h, false) }

// CheckTokensAcrossEmptyings is CheckTokens for the holds that an
// emptying of the collections separates: the README promises tokens
// "above those handed out more than two seconds before the emptying", for
// every primitive (issue 42, defect 3, closed: its default run found 164
// tokens back in 3,000 seeds before the fix, none in 1,000 after).
func CheckTokensAcrossEmptyings(h *History) []Violation { return checkTokens(h, true) }

// checkTokens checks the pairs of holds an emptying separates (across),
// or the others.
func checkTokens(h *History, across bool) []Violation {
	var vs []Violation
	for _, hs := range byKey(h) {
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				if !tokensJudged(h, a, b, across) {
					continue
				}
				if v, broken := judgeTokens(a, b, across); broken {
					vs = append(vs, v)
				}
			}
		}
	}
	return vs
}

// tokensJudged reports whether checkTokens judges the tokens of a and b
// (a began no later than b): a began first, and an emptying separates
// them (across) or none does.
func tokensJudged(h *History, a, b *Hold, across bool) bool {
	if !a.Start.Before(b.Start) || h.emptiedBetween(a.Start, b.Start) != across {
		return false
	}
	// The promise is about the tokens handed out more than emptyingGap
	// before an emptying, however long after it b began: a token handed
	// out less than that before may come again after it (a segment
	// started after the emptying, in the same second of store time as
	// a's, has a's segment's base: dsync/internal/queue, "Segments", L2 and
	// L3). Judged by b.Start-a.Start instead, a token handed out 0.48 s
	// before an emptying and again 1.46 s later was reported broken.
	return !across || h.emptiedBetween(a.Start.Add(emptyingGap), b.Start)
}

// emptyingGap is how long before an emptying a token must have been
// handed out for the tokens after it to be above it: the engine's Margin
// and Quantum (a second each; dsync/internal/queue, L3), plus twice the error
// bound of the store's time estimate, which the memory store has not.
const emptyingGap = 2 * time.Second

// judgeTokens judges the tokens of a and b, a judged pair of holds of a
// key of which a began first: a's must lie below b's if their order is
// promised (tokensOrdered), and differ in any case.
func judgeTokens(a, b *Hold, across bool) (Violation, bool) {
	switch {
	case tokensOrdered(a, b, across) && a.Token >= b.Token && !takesBack(b, a):
		return Violation{PromiseTokens, fmt.Sprintf("%v began before %v with a token not below it", a, b)}, true
	case a.Token == b.Token && !lingered(a, b) && !takesBack(b, a):
		return Violation{PromiseTokens, fmt.Sprintf("%v and %v share a token", a, b)}, true
	}
	return Violation{}, false
}

// tokensOrdered reports whether the tokens of a and b must increase in
// the order the holds began: across an emptying always; otherwise if
// either hold excludes the other's kind, or for two semaphore holds of
// different limits (which take turns).
func tokensOrdered(a, b *Hold, across bool) bool {
	return across || a.Prim.exclusive() || b.Prim.exclusive() ||
		(a.Prim == PrimSem && b.Prim == PrimSem && a.Limit != b.Limit)
}

// lingered reports whether b may hold a's token again: both are read
// holds of one RWMutex value with the linger on (Hold.Value), and b began
// once a was given up (RLock took the claim a's RUnlock left lingering).
func lingered(a, b *Hold) bool {
	return a.Prim == PrimRead && b.Prim == PrimRead && a.Value != "" && a.Value == b.Value &&
		!a.Ended.IsZero() && !b.Start.Before(a.Ended)
}

// takesBack reports whether b took a back after an outage of the store
// (Hold.Resumes, once or more): the same claim, whose token it holds
// again.
func takesBack(b, a *Hold) bool {
	for x := b.Resumes; x != nil; x = x.Resumes {
		if x == a {
			return a.Token == b.Token
		}
	}
	return false
}
