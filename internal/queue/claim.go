package queue

import (
	"context"
	"errors"
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
	// the end of the wait for a session found missing).
	ExpiresAt time.Time
	// Terms are the blocking claim's (a Semaphore's limit may differ
	// from the waiter's).
	Terms Terms
}

// BusyError is returned by Claim with try set, when the key's newest
// epoch has not ended.
type BusyError struct {
	Key     string
	Blocker Blocker // zero if no live claim was read (races lost in every round, a segment found over)
}

func (e *BusyError) Error() string {
	if e.Blocker.Epoch == 0 {
		return fmt.Sprintf("chain: %q taken by another claim", e.Key)
	}
	return fmt.Sprintf("chain: %q held by epoch %d", e.Key, e.Blocker.Epoch)
}

// Claim inserts key's next epoch for owner in session, with terms t: a
// place at the end of the queue, which holds by the grant rule (Walk).
//
// With try set, it inserts only when the newest epoch has ended (or, for a
// claim that may pass it, is live with a mode the claim passes), and
// returns a *BusyError otherwise; it never waits.
//
// Every claim is inserted with its shadow (KindShadow), in one request.
// When the engine released the epoch below its insert itself, and that
// claim's hold proves the new one holds (its release is Clear, or both
// are shared, or both weighted with room: tip.go), the insert also
// carries that claim's shadow again, after its own: the shadow's
// duplicate key proves the claim still in the store, so the release the
// engine made stands, and the claim holds without another read. Without
// it (the store was emptied or restored since), Walk reads the chain.
//
// An error other than *BusyError means the claim may exist: it is then
// withdrawn (now, or by a later Flush), never used.
func (e *Engine) Claim(ctx context.Context, key, owner, session string, t Terms, try bool) (*Claim, error) {
	if key == "" || owner == "" || session == "" {
		return nil, errors.New("chain: empty key, owner or session")
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	// The key's knowledge stays while the Claim runs, and then until the
	// claim it returns ends (see keys.state).
	e.keys.pin(key)
	q := claimRun{e: e, key: key, owner: owner, session: session, terms: t, try: try}
	c, err := q.run(ctx)
	if c != nil && err == nil {
		c.pinned = true
	} else {
		e.keys.unpin(key)
	}
	return c, err
}

// ReadClaim reads the claim of key's epoch. A claim found has existed, so
// the next Claim of key may insert above it (F1) instead of trying each
// epoch up to it.
func (e *Engine) ReadClaim(ctx context.Context, key string, epoch uint64) (d Doc, found bool, err error) {
	d, found, err = e.store.Get(ctx, ClaimID(key, epoch))
	if err == nil && found {
		e.keys.learnNewest(key, epoch)
	}
	return d, found, err
}

// TryClaim is TryLock's one attempt: it claims key only when its newest
// epoch has ended (or passes by t's mode), and returns the claim only if it
// holds at once; otherwise it withdraws what it inserted and returns a
// *BusyError.
func (e *Engine) TryClaim(ctx context.Context, key, owner, session string, t Terms) (*Claim, error) {
	c, err := e.Claim(ctx, key, owner, session, t, true)
	if err != nil {
		return nil, err
	}
	c.try = true
	head, blocker, err := e.Walk(ctx, c)
	if err == nil && head {
		return c, nil
	}
	if errors.Is(err, ErrReset) {
		return nil, err // Walk gave the claim up
	}
	// Within the try's own bound: a withdrawal that cannot be confirmed
	// in it is left to Flush, and the try returns on time.
	e.abandon(ctx, c)
	if err != nil {
		return nil, err
	}
	return nil, &BusyError{Key: key, Blocker: blocker}
}

// End ends c: a release if it held, a withdrawal if not. A release also
// prunes a part of the key's history below its floor, when a gate allows
// (prune.go). An error means the marker's fate is unknown; Flush sends it
// again.
func (e *Engine) End(ctx context.Context, c *Claim, held bool) error {
	return e.EndThen(ctx, c, held, nil)
}

// EndThen is End, calling ended (if not nil) once the marker is confirmed
// and before the release prunes: a caller that wakes the claim's waiters
// there hands the key over after one request (the marker's insert), where
// a prune (a read of a gate, of the claims below it, and a delete) would
// otherwise come first, once per bucket span and key (docs/deployments.md,
// "Costs", has the traced figures). It is not called when End returns an
// error. The prune's deletes may then land while the next holder walks, as another
// process's prune may (its walk reads the gate again if it finds a claim
// missing: walkfloor.go, missingBelow).
func (e *Engine) EndThen(ctx context.Context, c *Claim, held bool, ended func()) error {
	if takePin(c) {
		defer e.keys.unpin(c.Key) // after what the end teaches of the key, and its prune
	}
	if err := e.endMarker(ctx, c, held, ended); err != nil || !held {
		return err
	}
	e.prune(ctx, c.Key, c.Seg)
	return nil
}

// takePin reports whether c pins its key's knowledge (see keys.state), and
// clears it: the caller unpins the key once c's end is recorded.
func takePin(c *Claim) bool {
	pinned := c.pinned
	c.pinned = false
	return pinned
}

// endMarker is EndThen up to its prune, for a caller that unpinned c's key
// (after it returns): it sends c's end marker and records what it
// teaches.
func (e *Engine) endMarker(ctx context.Context, c *Claim, held bool, ended func()) error {
	kind := KindWithdraw
	if held || e.has(BugWithdrawAsRelease) {
		kind = KindRelease
	}
	d := Doc{ID: EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: kind, Nonce: c.Nonce,
		Session: c.Session, Sent: e.clock.ServerNow().Latest}
	if held && (c.Below || c.Terms.Mode == Exclusive) {
		d.Clear = true
	}
	c.ended = true
	below, known := e.holds.takeHeld(c) // taken even if the insert fails: no tip then
	if err := e.store.Insert(ctx, d); err != nil && !errors.Is(err, ErrExists) {
		e.ends.pend(d)
		return err
	}
	e.ends.settle(d.ID)
	e.holds.noteEnded(c.Nonce, ownEnd{below: below, known: held && known})
	if held {
		e.keys.learnTip(tipRelease{Doc: d, terms: c.Terms, below: below, belowKnown: known})
		if d.Clear {
			e.keys.learnOwn(c)
		}
	}
	if ended != nil {
		ended()
	}
	return nil
}

// shadowOf returns the shadow of claim d.
func shadowOf(d Doc) Doc {
	return Doc{ID: ShadowID(d.Key, d.Epoch, d.Nonce), Key: d.Key, Epoch: d.Epoch, Kind: KindShadow,
		Nonce: d.Nonce, Session: d.Session, Sent: d.Sent}
}

// abandon ends a claim that must never hold: its insert had an unknown
// outcome, or it landed below the floor. The withdrawal is retried by
// Flush if it fails (on an ended ctx it fails at once, and the caller
// decides how long to give Flush). A withdrawal that lands is told to the
// OnLanded hook, as one Flush lands is: a process may already wait behind
// the claim (its insert may have landed long before its reply), and
// would otherwise see the end only at its next look.
func (e *Engine) abandon(ctx context.Context, c *Claim) {
	if takePin(c) {
		defer e.keys.unpin(c.Key) // after what the end teaches of the key
	}
	// (A withdrawal never prunes: endMarker, not EndThen.)
	_ = e.endMarker(ctx, c, false, func() {
		e.ends.tellLanded(Doc{ID: EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: KindWithdraw,
			Nonce: c.Nonce, Session: c.Session})
	})
}

// withdraw acts on a step's verdict that c must never hold (giveUp): it
// forgets what the verdict says, withdraws c (a harmless marker if its
// claim is gone), and returns the verdict's error.
func (e *Engine) withdraw(ctx context.Context, c *Claim, v *giveUp) error {
	if v.reset {
		e.keys.forgetAll()
		e.holds.forgetHeads() // (apart from the keys' lock: see doc_types.go, I1)
	}
	if v.drop {
		e.keys.dropCover(c.Key, c.Seg)
	}
	if v.dropStale {
		e.keys.dropStale(c.Key, c.Seg, c.History)
	}
	e.abandon(context.WithoutCancel(ctx), c)
	if v.dropAfter {
		e.keys.dropCover(c.Key, c.Seg)
	}
	if v.hasGap {
		e.keys.noteGap(c.Key, v.gap)
	}
	return v.err
}
