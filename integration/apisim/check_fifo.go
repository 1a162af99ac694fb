package apisim

import "fmt"

// CheckFIFO: "Waiters hold in the order they called Lock" (Mutex);
// an RWMutex's "readers and writers queue together, first come first
// served"; an election's candidates: "the candidate that has campaigned
// longest leads next". A call whose claim was in the store before another
// call was made must hold first, unless the collections were emptied in
// between (every queue starts again), or the first call's process knew
// the key before an emptying that came before its claim and the second
// call's hold is the key's first after that emptying: the documented
// exception (a claim made on what a process cached of the key's old
// queue can wait behind the claim that starts its new one), or the second
// call took a claim that landed before the first's (an RLock of a value
// with the read linger on that takes its lingering read claim again,
// until its process hears of the writer queued behind it: RWMutex's doc;
// a value without it gets no such exemption). Tries do not
// queue; two readers, or two acquisitions of a semaphore, may hold
// together, in either order.
func CheckFIFO(h *History) []Violation {
	var vs []Violation
	forFIFO(h, func(a, b *Hold) {
		if b.Start.Before(a.Start) {
			vs = append(vs, Violation{PromiseFIFO, fmt.Sprintf("%v held before %v, whose claim landed at %v, before it was called at %v",
				b, a, a.Landed.Format(tf), b.Call.Format(tf))})
		}
	})
	return vs
}

// forFIFO calls f with every pair of holds whose order FIFO fixes: a
// must hold before b.
func forFIFO(h *History, f func(a, b *Hold)) {
	forPairs(h, func(a, b *Hold) {
		if fifoOrders(h, a, b) {
			f(a, b)
		}
	})
}

// forPairs calls f with every pair of holds of a key whose first, a,
// queued and landed its claim.
func forPairs(h *History, f func(a, b *Hold)) {
	for _, hs := range byKey(h) {
		for _, a := range hs {
			if !queued(a) || a.Landed.IsZero() {
				continue
			}
			for _, b := range hs {
				f(a, b)
			}
		}
	}
}

// queued reports whether x's call queued: a Lock, RLock or Campaign, not
// a try, and not a semaphore's or a Once's.
func queued(x *Hold) bool {
	return !x.Try && (x.Prim == PrimMutex || x.Prim == PrimRead || x.Prim == PrimWrite || x.Prim == PrimElection)
}

// fifoOrders reports whether FIFO fixes that a, a queued hold of a key
// whose claim landed, holds before b, another hold of the key: b queued
// too, was called after a's claim landed and (if b is a read hold of a
// value with the linger on) its claim landed after a's, they are not two
// readers,
// no emptying came between a's claim and b's hold, and b did not start
// the key's new queue after an emptying that a's process knew the key
// from before.
func fifoOrders(h *History, a, b *Hold) bool {
	return fifoOrdersButCache(h, a, b) && !startsQueueAfterCache(h, a, b)
}

// fifoOrdersButCache is fifoOrders without the exception of a key cached
// across an emptying.
func fifoOrdersButCache(h *History, a, b *Hold) bool {
	return b != a && queued(b) && a.Landed.Before(b.Call) &&
		(b.Value == "" || b.Landed.IsZero() || a.Landed.Before(b.Landed)) &&
		(a.Prim != PrimRead || b.Prim != PrimRead) &&
		!h.emptiedBetween(a.Landed, b.Start)
}

// startsQueueAfterCache reports whether b is the first hold of its key
// after the last emptying before a's claim landed, and a's process had
// claimed the key before that emptying (so it may have claimed on what
// it cached of the queue the emptying removed).
func startsQueueAfterCache(h *History, a, b *Hold) bool {
	e, ok := h.lastEmptying(a.Landed)
	if !ok || a.KnownSince.IsZero() || !a.KnownSince.Before(e) || !b.Start.After(e) {
		return false
	}
	for _, x := range h.Holds {
		if x.Key == b.Key && x.Start.After(e) && x.Start.Before(b.Start) {
			return false
		}
	}
	return true
}

// fifoPairs counts the pairs of holds whose order CheckFIFO fixes, and
// those it would fix but for the exception of a key cached across an
// emptying (startsQueueAfterCache).
func fifoPairs(h *History) (pairs, exempt int) {
	forPairs(h, func(a, b *Hold) {
		if fifoOrdersButCache(h, a, b) {
			if startsQueueAfterCache(h, a, b) {
				exempt++
			} else {
				pairs++
			}
		}
	})
	return pairs, exempt
}
