package queue

import (
	"fmt"
	"time"
)

// A Ref names a place in a key's queue: one epoch, made in one session.
// It is what the owner of a claim keeps between its calls (a dsync
// Client keeps one per hold and waiting claim), and what Resume rebuilds
// the engine's Claim from.
type Ref struct {
	Key     string // as stored (namespaced keys begin with "dsync:")
	Owner   string
	Session string
	// Nonce is unique to the insert that made the claim; an end marker
	// ends only the claim with its nonce.
	Nonce string
	// Epoch is the claim's place, and its fencing token once it holds: it
	// strictly increases with each hold of Key and is never reused.
	Epoch uint64
	// Seg is the claim's segment: its first epoch (segment.go). A walk
	// ends there: nothing below it belongs to the segment.
	Seg   uint64
	Terms Terms // how it shares the key
	// History is the store's history in which the claim's owner learnt
	// its segment (history.go), recorded in its document (Doc.History):
	// the claim holds only in that history. "" (unknown) forgoes the
	// check.
	History string
	// Below reports, once the claim holds, whether every lower claim had
	// ended by then (always, for an exclusive claim): its release says so
	// (Doc.Clear), which ends every walk that reads it, and may raise the
	// key's floor.
	Below bool
	// Waiter is the identity of the lock set the claim is a member of
	// (Doc.Waiter), "" for a claim of a single primitive. It is stored
	// for deadlock detection to follow; no walk reads it: a claim holds
	// or waits as it would without it.
	Waiter string
}

// Claim is the engine's claim: its Ref, and what the walks of it learnt.
type Claim struct {
	Ref
	// checked: every epoch in [checked, Epoch) is known to have ended,
	// from reads of this claim's walks.
	checked uint64
	// clear: nothing below checked can keep the claim from holding (a
	// release that ends the walk, a counting floor above a missing claim,
	// or the insert itself proved it); strong: everything below checked
	// has ended (not only what conflicts with the claim).
	clear, strong bool
	// passed are the live claims in [checked, Epoch) that the claim's
	// mode passes, highest first: a weighted claim holds only while their
	// weights and its own fit the limit.
	passed []passedClaim
	// read: a walk read the store after the insert. A claim that holds on
	// such reads first checks that its own document is still there, so
	// that a store emptied meanwhile cannot have handed its epoch to
	// another claim whose predecessors the walk read.
	read bool
	// blocker is the claim document of epoch checked−1 that the last walk
	// found live, so that the next walk reads only its marker: a claim
	// document never changes, and the one below a live claim is never
	// pruned (a prune that passed it is caught by the floor check).
	blocker    Doc
	hasBlocker bool
	// run is the last run of the key's queue this claim's walk read
	// (run.go), runSeq the engine's read count just after it was sent.
	// Only the Walk that read it uses it.
	run    *run
	runSeq uint64 // 0 if the run did not reach the claim itself
	runs   uint   // the runs this Walk read
	// after is the claim whose release the walk that found c holding
	// stopped at: the hold just before c's.
	after    Doc
	hasAfter bool
	// walks counts the claim's walks (Walk calls).
	walks uint64
	// suspects are epochs of claims in passed whose ends were heard of
	// (Suspect): the next full reads their markers first, at once.
	suspects []uint64
	// try: TryClaim's claim, which never waits: its walk stops where the
	// weights it passed leave it no room (liveBelow).
	try bool
	// ended: End was called on c (a release or a withdrawal); a walk of
	// it never finds it holding again.
	ended bool
	// pinned: c keeps its key's knowledge in the engine until End (see
	// keys.state).
	pinned bool
	// inHistory: the protocol document, read after the claim's insert,
	// named its History (claimOfHistory).
	inHistory bool
}

// After returns the claim that held just before c, if the walk that found
// c holding read its release (it may instead have known from its insert
// that every claim below c had ended).
func (c *Claim) After() (Doc, bool) { return c.after, c.hasAfter }

// Resume rebuilds a claim from what its owner kept of it (a Walk on it
// starts from the top again).
func Resume(r Ref) *Claim { return &Claim{Ref: r, checked: r.Epoch} }

// Blocker describes the live claim a waiter waits for.
type Blocker struct {
	Epoch   uint64
	Owner   string
	Session string
	// ExpiresAt is, in server time, when the waiter should look at it
	// again if nothing else wakes it: its session's expiry when read (or
	// the end of the wait for a session found missing, or, for a claim
	// with an outage grace whose session expired without the record of
	// up-time proving it dead, a while later: judge_outage.go).
	ExpiresAt time.Time
	// Terms are the blocking claim's (a Semaphore's limit may differ
	// from the waiter's).
	Terms Terms
	// Waiter is the blocking claim's (Ref.Waiter): the lock set that
	// holds or waits ahead, "" for a single primitive's claim. A
	// deadlock detector follows the wait-for graph through it.
	Waiter string
}

// BusyError is returned by Claim with try set, when the key's newest
// epoch has not ended.
type BusyError struct {
	Key     string
	Blocker Blocker // zero if no live claim was read (races lost in every round, a segment found over)
}

func (e *BusyError) Error() string {
	if e.Blocker.Epoch == 0 {
		return fmt.Sprintf("%q taken by another claim", e.Key)
	}
	return fmt.Sprintf("%q held by epoch %d", e.Key, e.Blocker.Epoch)
}
