package queue

import (
	"context"
	"errors"
	"time"
)

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
	return e.ClaimIn(ctx, key, owner, session, "", t, try)
}

// ClaimIn is Claim for a member of the lock set waiter: the claim's Ref
// and document name it (Ref.Waiter, Doc.Waiter), and nothing else
// differs. An empty waiter is Claim's claim, which names none.
func (e *Engine) ClaimIn(ctx context.Context, key, owner, session, waiter string, t Terms, try bool) (*Claim, error) {
	if key == "" || owner == "" || session == "" {
		return nil, errors.New("empty key, owner or session")
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	// The key's knowledge stays while the Claim runs, and then until the
	// claim it returns ends (see keys.state).
	e.keys.pin(key)
	q := claimRun{e: e, key: key, owner: owner, session: session, waiter: waiter, terms: t, try: try}
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
	return e.TryClaimIn(ctx, key, owner, session, "", t)
}

// TryClaimIn is TryClaim for a member of the lock set waiter (ClaimIn).
func (e *Engine) TryClaimIn(ctx context.Context, key, owner, session, waiter string, t Terms) (*Claim, error) {
	c, err := e.ClaimIn(ctx, key, owner, session, waiter, t, true)
	if err != nil {
		return nil, err
	}
	c.try = true
	head, blocker, err := e.Walk(ctx, c)
	if err == nil && head {
		return c, nil
	}
	if c.ended {
		return nil, err // Walk gave the claim up, and withdrew it
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
// (prune, below). An error means the marker's fate is unknown; Flush sends it
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
// missing: walkfloor.go, judgeMissing).
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
	d := Doc{ID: EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: e.endKind(held), Nonce: c.Nonce,
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
	if v.gap != 0 { // (a gap is at an epoch of a claim: 1 or more)
		e.keys.noteGap(c.Key, v.gap)
	}
	return v.err
}

// prune deletes the next chunk of key's history below the floor of the
// highest gate of segment seg that allows it now. Best effort.
func (e *Engine) prune(ctx context.Context, key string, seg uint64) {
	ks := e.keys.snapshot(key)
	if ks.seg != seg || seg == 0 || ks.floor.Epoch <= seg+1 {
		return // no floor known: the gates of lower buckets have none either
	}
	g, b, ok := e.pruneGate(ctx, key, seg, ks)
	if !ok {
		return
	}
	hi := g.Floor.Epoch
	lo, err := e.pruneStart(ctx, key, seg, hi)
	if err != nil {
		return
	}
	if lo >= hi {
		e.keys.notePruned(key, seg, b, hi)
		return
	}
	end := min(hi, lo+pruneChunk)
	ids, ok := e.pruneIDs(ctx, key, seg, g, lo, end)
	if !ok {
		return
	}
	if len(ids) > 0 {
		if err := e.store.Delete(ctx, ids); err != nil {
			return
		}
	}
	if end == hi {
		e.keys.notePruned(key, seg, b, hi)
	} else {
		e.keys.notePruned(key, seg, b-1, end)
	}
}

// pruneGate returns the gate, of bucket b, whose floor key's segment seg
// (known as ks) may be pruned below now; ok is false if there is none to
// prune below yet (a gate that gives no floor to prune below is recorded
// as pruned).
func (e *Engine) pruneGate(ctx context.Context, key string, seg uint64, ks keyState) (g Doc, b int64, ok bool) {
	b = e.pruneBucket(ks)
	if b <= ks.pruned {
		return Doc{}, 0, false
	}
	g, found, err := e.store.Get(ctx, GateID(key, b))
	if err != nil {
		return Doc{}, 0, false
	}
	if !found || g.Kind != KindGate || g.Seg != seg || g.Floor.Epoch <= seg+1 {
		e.keys.notePruned(key, seg, b, 0)
		return Doc{}, 0, false
	}
	return g, b, true
}

// pruneIDs returns the IDs of the documents of epochs [lo, end) that a
// prune below gate g of segment seg deletes: each claim sent before g
// was, its shadow and its end marker (this process's own claims, copied
// under the lock, without a read). ok is false if a read failed.
func (e *Engine) pruneIDs(ctx context.Context, key string, seg uint64, g Doc, lo, end uint64) (ids []string, ok bool) {
	mine := e.keys.mineBetween(key, seg, lo, end)
	for epoch := lo; epoch < end; epoch++ {
		r, ok := mine[epoch]
		if !ok {
			d, found, err := e.store.Get(ctx, ClaimID(key, epoch))
			if err != nil {
				return nil, false
			}
			if !found || d.Kind != KindClaim {
				continue
			}
			r = mineRec{nonce: d.Nonce, sent: d.Sent}
		}
		if !r.sent.Before(g.Sent) {
			// Inserted after the gate was sent (landed late, or in a
			// history since emptied): not what its floor speaks of.
			continue
		}
		ids = append(ids, ShadowID(key, epoch, r.nonce), EndID(key, epoch, r.nonce), ClaimID(key, epoch))
	}
	return ids, true
}

// pruneStart returns the lowest epoch of segment seg below hi whose claim
// still exists (hi if none): what is left of the history below a floor
// is a run of epochs up to it, since prunes delete from the bottom up.
// It reads the claim below hi, then gallops down, then halves, starting
// from what this process pruned itself.
func (e *Engine) pruneStart(ctx context.Context, key string, seg, hi uint64) (uint64, error) {
	exists := func(epoch uint64) (bool, error) {
		d, found, err := e.store.Get(ctx, ClaimID(key, epoch))
		return found && d.Kind == KindClaim, err
	}
	present := hi - 1 // the lowest epoch known present
	if ok, err := exists(present); err != nil || !ok {
		return hi, err
	}
	low := seg // the highest epoch known gone (or the segment's first, never pruned)
	if p := e.keys.snapshot(key).prunedTo; p > low+1 && p < present {
		// Where this process's own prunes stopped: most often where the
		// run begins.
		ok, err := exists(p)
		if err != nil {
			return hi, err
		}
		if ok {
			below, err := exists(p - 1)
			if err != nil || !below {
				return p, err
			}
			present = p - 1
		} else {
			low = p
		}
	}
	return runStart(exists, low, present, hi)
}

// Pruning deletes a key's history below its floor while the key is in
// use (compaction, sweep.go, deletes the whole of keys nobody uses). Only
// the epochs of a segment below the floor of its gate of some bucket b
// go, and only once the store's time is PruneDelay past the start of
// bucket b+1: a process that relies on the segment then knows a gate of
// bucket b or later (its coverage), whose floor is at least F_b, and
// inserts above it (see the package documentation). The segment's first
// claim stays.
//
// Documents go by ID: a claim, its shadow and its marker (both named by
// the claim's nonce, which this process knows for its own claims and
// reads for others'), a chunk of epochs at a time, lowest first, so that
// what is left of the history below the floor is a run of epochs up to
// it. Any process prunes when it releases a claim, so a key used by short
// processes (cron jobs) is pruned too. A prune is best effort: a failure
// only keeps history longer; what a prune misses (a claim inserted after
// the gate was sent, a marker of an insert that never landed) stays until
// the key is compacted.

const (
	// pruneChunk bounds the epochs one release prunes.
	pruneChunk = 64
	// maxMine bounds the own claims remembered per key for pruning.
	maxMine = 512
)

// mineRec is one of this process's claims, for pruning: its nonce and the
// latest possible store time at its sending.
type mineRec struct {
	nonce string
	sent  time.Time
}

// runStart returns the lowest epoch in (low, present] whose claim exists
// (by exists), where low's is gone (or is the segment's first) and
// present's exists: it gallops down from present, then halves. On an
// error it returns hi, as pruneStart does.
func runStart(exists func(uint64) (bool, error), low, present, hi uint64) (uint64, error) {
	for step := uint64(1); present-low > 1; step *= 2 {
		x := low + 1
		if present > low+step {
			x = present - step
		}
		ok, err := exists(x)
		if err != nil {
			return hi, err
		}
		if !ok {
			low = x
			break
		}
		present = x
	}
	for present-low > 1 {
		x := low + (present-low)/2
		ok, err := exists(x)
		if err != nil {
			return hi, err
		}
		if ok {
			present = x
		} else {
			low = x
		}
	}
	return present, nil
}
