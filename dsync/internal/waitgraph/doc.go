// Package waitgraph finds a deadlock between lock sets in the records a
// store keeps, and names the one set of it that is to give up its wait.
// It reads only through a Reader and decides nothing else: it does not
// end a claim, and it finds no deadlock of single locks (their claims
// carry no Waiter).
//
// # The graph
//
// Its nodes are lock sets. A set is a node while it has a note
// (driver.Wait): the note says which claim the set waits with and which
// claims it holds, and the set releases none of them while that wait
// lasts. There is an edge X → Z, through a claim H, when
//
//   - X's latest note (the highest number: LatestWait) waits with a
//     claim C,
//   - H is an unended claim that holds C's key ahead of C and conflicts
//     with it (Reader.Holders), of the set Z (H's Waiter), and
//   - Z's latest note names H among its holds.
//
// A holder with no Waiter (a single Mutex, an election), a set with no
// note (it does not wait), and a note that does not name the holder (a
// note of an earlier wait, whose holds are gone) make no edge: they end a
// chain. The last rule is what keeps stale notes out: a set's note counts
// for a holder only while it describes the holding that holder is part
// of.
//
// # A cycle, and the check from W
//
// A cycle through W is a sequence of distinct sets W = S0, S1, ..., S(L-1)
// with an edge Si → S(i+1) for each i, and S(L-1) → W. Find looks for one
// from W's latest note, breadth first, so that it finds a shortest one,
// and reads each set's note and each waiting claim's holders at most once
// per check. It finds a cycle through W of at most MaxCycle (16) sets
// whenever the records it reads show one, and none of more: a longer
// cycle is not found, and waits as if there were no detection (its
// waits end with their contexts).
//
// No false positive. Find returns only what it read as a cycle through
// W. A chain of waits that is not a cycle ends at a holder without
// Waiter, a set without a note, or a note without the holder, and never
// returns to W; a cycle that W waits on but is not part of (W → X → Y →
// X) does not go through W, and Find ignores it: its own members find
// it. Reads made one after the other could still stitch a cycle that
// never existed at one instant (an edge read before a claim ended,
// another after a later one began), so Verify re-reads every claim of a
// cycle, the waiting claim and the holder of each edge (2L claims), and
// confirms that each is still unended. Claims only end: each claim
// unended at that second read was unended throughout the first pass, so
// at its end (T*) every waiting claim of the cycle had an unended
// conflicting holder ahead of it and could not hold, and every holder
// belonged to a set waiting with such a claim: one cycle at one instant,
// which none of its sets can leave but by giving up a wait. The caller
// still confirms, locally, that W waits with the claim of its note: a
// wait W gave up reads as unended until its withdrawal lands.
//
// What no second read can exclude, and what a caller states: a cycle
// that resolves after T* (a wait's context ends, a member is lost), before
// the victim has given up its wait.
//
// # The victim
//
// The victim of a cycle is the set of the greatest (Since, Set) of the
// cycle's notes: the youngest holding, and of equal ones the greatest
// set identity. Notes are never changed, so every member that finds the
// same cycle names the same victim; a set acts only as the victim of a
// cycle it found through itself and verified, and the others wait. With
// several cycles sharing sets, members may find different cycles, yet
// the youngest of all the sets on a cycle is the victim of whichever
// cycle it finds through itself: one set always acts, and each break
// removes at least one cycle.
package waitgraph
