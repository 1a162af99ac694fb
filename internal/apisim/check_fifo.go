package apisim

import "fmt"

// CheckFIFO: "Waiters hold in the order they called Lock" (Mutex);
// an RWMutex's "readers and writers queue together, first come first
// served"; an election's candidates: "the candidate that has campaigned
// longest leads next". A call whose claim was in the store before another
// call was made must hold first, unless the collections were emptied in
// between (every queue starts again). Tries do not queue; two readers, or
// two acquisitions of a semaphore, may hold together, in either order.
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
	for _, hs := range byKey(h) {
		for _, a := range hs {
			if !queued(a) || a.Landed.IsZero() {
				continue
			}
			for _, b := range hs {
				if fifoOrders(h, a, b) {
					f(a, b)
				}
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
// too, and was called after a's claim landed, they are not two readers,
// and no emptying came between a's claim and b's hold.
func fifoOrders(h *History, a, b *Hold) bool {
	return b != a && queued(b) && a.Landed.Before(b.Call) &&
		(a.Prim != PrimRead || b.Prim != PrimRead) &&
		!h.emptiedBetween(a.Landed, b.Start)
}

// fifoPairs counts the pairs of holds whose order CheckFIFO fixes.
func fifoPairs(h *History) int {
	n := 0
	forFIFO(h, func(a, b *Hold) { n++ })
	return n
}
