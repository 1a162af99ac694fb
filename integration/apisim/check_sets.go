package apisim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// The lock sets' promises (dsync/lockset's doc.go), as the violations
// name them. Exclusion and tokens are the usual checkers': each member's
// hold is a Hold.
const (
	PromiseSetAll    = "set-all-or-nothing" // a call holds every member it locks, or none
	PromiseSetCycle  = "set-cycle"          // a deadlock broken was a cycle of waits
	PromiseSetVictim = "set-victim"         // and its youngest Set gave it up
	PromiseSetOrder  = "set-order"          // Sets' Locks never wait for each other in a cycle
	PromiseSetBound  = "set-deadlock"       // a deadlock is broken within the bound
)

// CheckSets judges what the lock sets' calls returned (all or nothing),
// through the API and in the store, and every deadlock they broke (a
// cycle, its youngest the victim: check_set_breaks.go).
func CheckSets(h *History) []Violation {
	var vs []Violation
	for _, r := range h.SetRuns {
		var had []uint64  // the Set's tokens before the call
		var keys []string // the Set's members before the call
		for _, c := range r.Calls {
			if what, ok := allOrNothing(c, had); !ok {
				vs = append(vs, Violation{PromiseSetAll, fmt.Sprintf("p%d %s set %s: %s of %v returned %v at %v: %s (the Set's tokens %v, its members' %v, those it had %v)",
					r.Proc, r.Who, r.ID, c.Op, c.Keys, c.Err, c.Return.Format(tf), what, c.Tokens, c.Held, c.Kept)})
			}
			if c.Err == nil {
				had, keys = c.Tokens, append(keys, c.Keys...)
				continue
			}
			gone := c.Keys
			if c.Deadlock != nil {
				gone = append(slices.Clone(keys), c.Keys...)
			}
			for _, l := range leftInStore(h, r, c, gone) {
				vs = append(vs, Violation{PromiseSetAll, fmt.Sprintf("p%d %s set %s: %s of %v returned %v at %v; its claim %s@%d [%v, %v) was still in the store",
					r.Proc, r.Who, r.ID, c.Op, c.Keys, c.Err, c.Return.Format(tf), l.Key, l.Epoch, l.Landed.Format(tf), l.Ended.Format(tf))})
			}
		}
	}
	return append(vs, checkBreaks(h)...)
}

// storeSlack is how long after a failed call's return its claims may
// still end in a calm spell: a try's withdrawal that the call's own
// context cut short goes on in the background.
const storeSlack = 100 * time.Millisecond

// leftInStore returns the claims of r's Set at keys that were in the
// store, unended and not lost, storeSlack after c, a call that failed,
// returned: "every other return ... leaves none held: each member is
// released, its claim withdrawn, or, when lost, left to run out". A
// failed call sends each release and withdrawal and waits for its reply
// before it returns, so in a calm run, in a spell free of the faults of
// its process, the sessions emptied and emptyings (from two TTLs before
// the call), each has landed by then; elsewhere they may be sent again
// in the background, and are not judged, nor is a call cut short by its
// Client's Close, which ends what it left.
func leftInStore(h *History, r *SetRun, c *SetCall, keys []string) []*ClaimLife {
	if !h.Calm || r.ID == "" || c.Closed {
		return nil
	}
	by, from := c.Return.Add(storeSlack), c.Call.Add(-2*h.TTLs[r.Proc])
	if h.emptiedBetween(from, by) || slices.ContainsFunc(h.ProcFaults, func(f ProcFault) bool {
		return (f.Proc == r.Proc || f.Proc < 0) && !f.From.After(by) && !f.To.Before(from)
	}) {
		return nil
	}
	var left []*ClaimLife
	for _, l := range h.Lives {
		if l.Waiter == r.ID && slices.Contains(keys, l.Key) && l.setsAt(by) {
			left = append(left, l)
		}
	}
	return left
}

// allOrNothing judges one call, the Set holding had before it: "Lock and
// LockContext return nil only once every member was held ...; every
// other return, and every failed Try, leaves none held", and LockMore
// "returns nil holding all of them ..., or an error holding none of them
// and the Set's others as before; but a *DeadlockError, after which the
// Set holds nothing". It says what was broken.
func allOrNothing(c *SetCall, had []uint64) (string, bool) {
	if c.Op != "more" {
		had = nil
	}
	switch {
	case c.Err == nil:
		if len(c.Tokens) != len(had)+len(c.Keys) || !slices.Equal(c.Tokens[:len(had)], had) {
			return "the Set's tokens are not those it had and one per member added", false
		}
		for i, t := range c.Held {
			if t == 0 || t != c.Tokens[len(had)+i] {
				return fmt.Sprintf("member %q holds token %d", c.Keys[i], t), false
			}
		}
	case c.Deadlock != nil:
		if c.Tokens != nil || slices.ContainsFunc(append(slices.Clone(c.Held), c.Kept...), func(t uint64) bool { return t != 0 }) {
			return "a member still held after a *DeadlockError", false
		}
		// Err names the first loss: a member lost before the break
		// (its session gone) comes first.
		if !errors.Is(c.SetErr, lockset.ErrDeadlock) && !errors.Is(c.SetErr, dsync.ErrLost) {
			return fmt.Sprintf("the Set's Err is %v, neither the deadlock nor a loss", c.SetErr), false
		}
	default:
		if slices.ContainsFunc(c.Held, func(t uint64) bool { return t != 0 }) {
			return "a member it locked holds after its failure", false
		}
		if len(c.Tokens) != len(had) {
			return "the Set does not hold what it held before", false
		}
	}
	return "", true
}
