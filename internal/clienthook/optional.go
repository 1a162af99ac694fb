package clienthook

import "github.com/go-dsync/dsync/dsync/driver"

// PassOptional returns outer, a store that wraps inner by embedding
// driver.Store, with the optional interfaces that the Client looks for on
// a store passed on to inner where outer does not implement them itself:
// driver.RunReader (runs of a key's queue) and driver.PeerStore (direct
// hints' records). A struct that embeds the interface driver.Store has
// the methods of driver.Store only, so a wrapper without PassOptional
// hides them: its Client's engine then reads claims one by one, and a
// test of runs or hints through it tests nothing.
//
// A wrapper that must see a call of an optional interface (to record it,
// or to fail it under a fault) implements that method itself: PassOptional
// keeps it. The others reach inner unseen.
func PassOptional(outer, inner driver.Store) driver.Store {
	rr, ownRuns := outer.(driver.RunReader)
	ps, ownPeers := outer.(driver.PeerStore)
	innerRR, innerRuns := inner.(driver.RunReader)
	innerPS, innerPeers := inner.(driver.PeerStore)
	if (ownRuns || !innerRuns) && (ownPeers || !innerPeers) {
		return outer // nothing to pass on: outer keeps its own method set
	}
	runs, peers := ownRuns || innerRuns, ownPeers || innerPeers
	if !ownRuns {
		rr = innerRR
	}
	if !ownPeers {
		ps = innerPS
	}
	switch {
	case runs && peers:
		return struct {
			driver.Store
			driver.RunReader
			driver.PeerStore
		}{outer, rr, ps}
	case runs:
		return struct {
			driver.Store
			driver.RunReader
		}{outer, rr}
	case peers:
		return struct {
			driver.Store
			driver.PeerStore
		}{outer, ps}
	}
	return outer
}
