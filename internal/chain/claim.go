package chain

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// maxClaimRounds bounds the inserts of one Claim that keeps losing epochs
// to other processes.
//
// A process that locks and unlocks in a loop while nobody is queued takes
// the next epoch one insert after its release. A process joining it reads
// where the queue ends at most once per Claim, then walks up one insert at
// a time, which gains on the loop (one insert against its two): it needs
// room to catch up, or it gives up, sleeps, and starts behind again.
const maxClaimRounds = 32

// maxDups is how many epochs in a row a Claim loses to other processes
// before it looks for the key's newest claim (reads by ID, galloping up:
// floor.go) instead of trying the next. Four covers the queue of a
// handful of processes taking turns.
const maxDups = 4

// Claim is a place in a key's queue: one epoch, made in one session.
type Claim struct {
	Key     string
	Owner   string
	Session string
	Nonce   string
	Epoch   uint64 // the fencing token once the claim holds
	// Seg is the claim's segment: its first epoch (segment.go). A walk
	// ends there: nothing below it belongs to the segment.
	Seg   uint64
	Terms Terms
	// Below reports, once the claim holds, whether every lower claim had
	// ended by then (always, for an exclusive claim): its release says so
	// (Doc.Clear), which ends every walk that reads it, and may raise the
	// key's floor. An owner that rebuilds the claim (Resume) to end it
	// sets it again.
	Below bool
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
	// after is the claim whose release the walk that found c holding
	// stopped at: the hold just before c's.
	after    Doc
	hasAfter bool
	// ended: End was called on c (a release or a withdrawal); a walk of
	// it never finds it holding again.
	ended bool
	// pinned: c keeps its key's knowledge in the engine until End (see
	// Engine.state).
	pinned bool
}

// After returns the claim that held just before c, if the walk that found
// c holding read its release (it may instead have known from its insert
// that every claim below c had ended).
func (c *Claim) After() (Doc, bool) { return c.after, c.hasAfter }

// Resume rebuilds a claim of segment seg from what its owner kept of it
// (a Walk on it starts from the top again).
func Resume(key, owner, session, nonce string, epoch, seg uint64, t Terms) *Claim {
	return &Claim{Key: key, Owner: owner, Session: session, Nonce: nonce, Epoch: epoch, Seg: seg, Terms: t, checked: epoch}
}

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
	Blocker Blocker // zero if the claim was lost in a race
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
// When the engine released the epoch below its insert itself, the insert
// also carries that claim's shadow again, after its own: the shadow's
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
	// claim it returns ends (see Engine.state).
	e.pin(key)
	q := claimRun{e: e, key: key, owner: owner, session: session, terms: t, try: try}
	c, err := q.run(ctx)
	if c != nil && err == nil {
		c.pinned = true
	} else {
		e.unpin(key)
	}
	return c, err
}

// run is Claim's work.
func (q *claimRun) run(ctx context.Context) (*Claim, error) {
	e, key, try := q.e, q.key, q.try
	q.load()
	q.ttl, q.exp = e.claimTerms(q.session)
	if q.ttl > e.span() {
		// A hold must end before its key's coverage can (segment.go):
		// coverage reaches about two spans ahead when it starts.
		return nil, fmt.Errorf("chain: the TTL %v is above the bucket span %v", q.ttl, e.span())
	}
	topRead := false
	for round := range maxClaimRounds {
		if ks := e.snapshot(key); !e.covered(ks, e.clock.ServerNow().Latest) {
			c, done, err := q.enter(ctx)
			if done {
				return c, err
			}
			if q.seg == 0 {
				continue // the gate went: start again
			}
		} else if q.seg != ks.seg {
			q.load()
		}
		if try && q.tip.Epoch == 0 && !topRead {
			topRead = true
			if err := q.readTop(ctx); err != nil {
				return nil, err
			}
		}
		c, done, err := q.round(ctx, round)
		if done {
			return c, err
		}
	}
	return nil, &BusyError{Key: key}
}

// load sets what q knows of its key from the engine's knowledge.
func (q *claimRun) load() {
	ks := q.e.snapshot(q.key)
	q.seg, q.base, q.known, q.tip = ks.seg, ks.newest, ks.newest > 0, Doc{}
	if ks.hasTip() {
		q.tip = ks.tip
	}
}

// newClaim returns q's claim of epoch in segment seg.
func (q *claimRun) newClaim(epoch, seg uint64) *Claim {
	e := q.e
	c := &Claim{Key: q.key, Owner: q.owner, Session: q.session, Nonce: e.cfg.NewID(), Epoch: epoch, Seg: seg, Terms: q.terms, checked: epoch}
	if e.has(BugEndBySession) {
		c.Nonce = q.session
	}
	return c
}

// claimDoc returns c's claim document, sent at the latest possible store
// time now.
func (q *claimRun) claimDoc(c *Claim, now time.Time) Doc {
	e := q.e
	return Doc{ID: ClaimID(q.key, c.Epoch), Key: q.key, Epoch: c.Epoch, Seg: c.Seg, Kind: KindClaim, Nonce: c.Nonce,
		Session: q.session, Owner: q.owner, TTL: q.ttl, Exp: q.exp, Sent: now, Host: e.cfg.Host, PID: e.cfg.PID,
		Mode: q.terms.Mode, Weight: q.terms.Weight, Limit: q.terms.Limit}
}

// claimRun is the state of one Claim call: where it inserts next and what
// it knows of the epoch below.
type claimRun struct {
	e                   *Engine
	key, owner, session string
	terms               Terms
	try                 bool
	base                uint64 // the epoch known to exist below the next insert
	known               bool   // base is known (false: read the newest claim first)
	tip                 Doc    // the release marker of base, if known
	seg                 uint64 // the segment claimed in (segment.go)
	dups                int    // epochs lost in a row
	newestRead          bool   // this run read the newest claim once
	ttl                 time.Duration
	exp                 time.Time
}

// readTop reads the key's newest claim for a try: busy unless it ended.
func (q *claimRun) readTop(ctx context.Context) error {
	e := q.e
	d, found, err := e.top(ctx, q.key, q.seg)
	if err != nil {
		return q.topFailed(ctx, err)
	}
	q.base, q.known = 0, true
	if found && d.Epoch >= q.seg && d.Seg != q.seg {
		return q.stale()
	}
	if found && d.Epoch >= q.seg {
		ended, _, _, blocker, err := e.ended(ctx, d)
		if err != nil {
			return err
		}
		e.learnNewest(q.key, d.Epoch)
		if !ended && !passes(q.terms, d) {
			return &BusyError{Key: q.key, Blocker: blocker}
		}
		q.base = d.Epoch
	}
	return nil
}

// topFailed handles an error of top: a floor that does not count (a gate
// of a store's earlier history) leaves the segment to lapse, unless its
// gate is gone, in which case the segment is forgotten at once.
func (q *claimRun) topFailed(ctx context.Context, err error) error {
	if !errors.Is(err, errFloorStray) {
		return err
	}
	e := q.e
	ks := e.snapshot(q.key)
	if ks.seg == q.seg {
		g, found, gerr := e.store.Get(ctx, GateID(q.key, ks.cover))
		if gerr != nil {
			return gerr
		}
		if !found || g.Kind != KindGate || g.Seg != q.seg {
			e.dropCover(q.key, q.seg)
		}
	}
	q.seg = 0
	return &BusyError{Key: q.key}
}

// stale drops q's segment, which a claim of a later one showed over: a
// try reports the key busy (its next attempt finds the live segment).
func (q *claimRun) stale() error {
	q.e.dropCover(q.key, q.seg)
	q.seg = 0
	return &BusyError{Key: q.key}
}

// round makes one insert attempt; done reports that Claim returns (c, err).
func (q *claimRun) round(ctx context.Context, round int) (c *Claim, done bool, err error) {
	e := q.e
	ks := e.snapshot(q.key)
	if ks.seg != q.seg {
		return nil, false, nil // the segment went (dropped): enter again
	}
	if again, err := q.findBase(ctx, round, ks); err != nil || again {
		return nil, err != nil, err
	}
	// Without knowledge, try the segment's first epoch: it is never
	// pruned, so its insert succeeds only in a segment that has none (a
	// start whose claim never landed, or a store that lost the key's
	// history).
	epoch := max(q.base+1, q.seg)
	now := e.clock.ServerNow().Latest
	if epoch >= e.ceiling(now) {
		// More than Rate epochs in a Quantum: a later segment's base
		// might not clear them. Wait for the store's time to move on.
		return nil, true, &BusyError{Key: q.key}
	}
	// The proof that the insert lands above every pruned epoch: the gate
	// that covers the segment now, and its floor (see floor.go).
	checked := e.clock.Mono()
	ks = e.snapshot(q.key)
	if !q.insertable(ks, epoch, now) {
		return nil, false, nil
	}
	proven := epoch == q.seg && ks.floor.Epoch == 0 || e.has(BugNoFloorProof)
	c = q.newClaim(epoch, q.seg)
	docs, chained := q.insertDocs(c, now)
	sent := e.clock.Mono()
	dup, err := e.store.InsertOrdered(ctx, docs)
	replied := e.clock.Mono()
	err = claimInsertErr(docs[0], dup, err)
	switch {
	case err == nil:
		timely := sent-checked < e.cfg.ViewTrust && replied-sent < e.cfg.AcquireWindow
		return q.landed(ctx, c, docs[0], proven || timely, chained, dup)
	case errors.Is(err, ErrExists):
		return q.lost(epoch)
	default:
		e.abandon(ctx, c)
		e.forget(q.key)
		return nil, true, err
	}
}

// findBase settles the epoch q inserts above: what q knows below the key's
// floor is dropped, and what it does not know is read (the key's newest
// claim), unless the segment's first epoch is worth a try. again: the
// newest claim showed q's segment over, so the Claim loop enters again.
func (q *claimRun) findBase(ctx context.Context, round int, ks keyState) (again bool, err error) {
	e := q.e
	if q.known && q.base < ks.floor.Epoch && !e.has(BugNoFloorProof) {
		// What this run knows lies below the key's floor, where epochs may
		// be pruned: go on from the floor.
		q.known = false
	}
	if !q.known && (round > 0 || ks.gap > 0 || ks.floor.Epoch > 0) {
		d, found, err := e.top(ctx, q.key, q.seg)
		if err != nil {
			return false, q.topFailed(ctx, err)
		}
		q.base, q.known, q.tip = 0, true, Doc{}
		if found && d.Epoch >= q.seg && d.Seg != q.seg {
			// A claim of a later segment: this process's segment is over.
			e.dropCover(q.key, q.seg)
			q.seg = 0
			return true, nil
		}
		if found && d.Epoch >= q.seg {
			q.base = d.Epoch
		}
	}
	return false, nil
}

// insertable reports whether the coverage ks, known now, proves an insert
// of epoch above every pruned epoch: the segment is covered, and epoch
// lies above its gate's floor. If not, the Claim loop enters the segment
// again, or goes on from the floor.
func (q *claimRun) insertable(ks keyState, epoch uint64, now time.Time) bool {
	e := q.e
	if ks.seg != q.seg || !e.covered(ks, now) {
		return false // the coverage ended meanwhile: enter again
	}
	if epoch <= ks.floor.Epoch && !e.has(BugNoFloorProof) {
		q.known = false // below the floor: go on from it
		return false
	}
	return true
}

// insertDocs returns what the insert of c sends, in order: its claim
// document, its shadow, and, if chained, the shadow of the claim below.
func (q *claimRun) insertDocs(c *Claim, now time.Time) (docs []Doc, chained bool) {
	e := q.e
	d := q.claimDoc(c, now)
	docs = []Doc{d, shadowOf(d)}
	// Only a release that ends every walk (its claim held with everything
	// below ended) proves anything for the claim above it.
	chained = q.tip.Epoch == q.base && q.base >= q.seg && q.tip.Clear && !e.has(BugTrustCache)
	if chained {
		// The release below, as the shadow of its claim: present only if
		// the store still holds that claim (see Claim).
		docs = append(docs, shadowOf(Doc{Key: q.key, Epoch: q.tip.Epoch, Nonce: q.tip.Nonce, Session: q.tip.Session, Sent: now}))
	}
	return docs, chained
}

// claimInsertErr is the outcome of the ordered insert of claim d and what
// follows it, where dup is the index of the first duplicate key: nil if
// the claim and its shadow landed, ErrExists if the epoch was taken.
func claimInsertErr(d Doc, dup int, err error) error {
	switch {
	case err == nil && dup == 0:
		err = ErrExists
	case err == nil && dup == 1:
		err = fmt.Errorf("chain: the shadow of %s exists: nonces are not unique", d.ID)
	}
	return err
}

// landed decides what an insert of c that landed gives (d is its claim
// document, dup as in claimInsertErr): c, unless the coverage known before
// it cannot prove it (not provenBefore) and the coverage known now does
// not either; c holds at once if its chained shadow proved the claim
// below still in the store.
func (q *claimRun) landed(ctx context.Context, c *Claim, d Doc, provenBefore, chained bool, dup int) (*Claim, bool, error) {
	e := q.e
	if !provenBefore {
		// The reply came too late for the coverage known before the
		// insert to prove it: judge it by the coverage known now.
		if ok := q.aboveFloor(c.Epoch); !ok {
			e.abandon(ctx, c)
			return nil, false, nil
		}
	}
	e.learnNewest(q.key, c.Epoch)
	e.noteMine(c, d.Sent)
	if chained && dup == 2 || e.has(BugTrustCache) && q.tip.Epoch == q.base && q.base >= q.seg {
		// The claim below, which this process released, is still in
		// the store: everything below ours has ended.
		c.clear, c.strong, c.Below = true, true, true
		e.confirmHead(c)
	}
	// Otherwise (the shadow was missing: the store lost the claim
	// below, or never had its shadow) the walk reads what it needs.
	return c, true, nil
}

// lost records that another process took epoch first: a try is busy; any
// other Claim tries the epoch above, or after maxDups epochs lost in a row
// looks for where the queue ends.
func (q *claimRun) lost(epoch uint64) (*Claim, bool, error) {
	q.e.learnNewest(q.key, epoch)
	if q.try {
		return nil, true, &BusyError{Key: q.key}
	}
	q.base, q.tip = epoch, Doc{}
	if q.dups++; q.dups >= maxDups && !q.newestRead {
		// Many waiters ahead: look for where the queue ends rather than
		// walk up it one insert at a time (once: by the time a second
		// look came back the end would have moved on).
		q.known, q.dups, q.newestRead = false, 0, true
	}
	return nil, false, nil
}

// aboveFloor reports, after a claim's insert of epoch was confirmed,
// whether the coverage this process knows now proves it above every
// pruned epoch: the segment is covered, and epoch lies above its gate's
// floor. If not, the claim must be given up, and the next insert goes on
// from the floor.
func (q *claimRun) aboveFloor(epoch uint64) bool {
	e := q.e
	ks := e.snapshot(q.key)
	if ks.seg != q.seg || !e.covered(ks, e.clock.ServerNow().Latest) {
		return false // the Claim loop enters the segment again
	}
	if epoch <= ks.floor.Epoch {
		q.known = false
		return false
	}
	return true
}

// ReadClaim reads the claim of key's epoch. A claim found has existed, so
// the next Claim of key may insert above it (F1) instead of trying each
// epoch up to it.
func (e *Engine) ReadClaim(ctx context.Context, key string, epoch uint64) (d Doc, found bool, err error) {
	d, found, err = e.store.Get(ctx, ClaimID(key, epoch))
	if err == nil && found {
		e.learnNewest(key, epoch)
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

// shadowOf returns the shadow of claim d.
func shadowOf(d Doc) Doc {
	return Doc{ID: ShadowID(d.Key, d.Epoch, d.Nonce), Key: d.Key, Epoch: d.Epoch, Kind: KindShadow,
		Nonce: d.Nonce, Session: d.Session, Sent: d.Sent}
}

// abandon ends a claim that must never hold: its insert had an unknown
// outcome, or it landed below the floor. The withdrawal is retried by
// Flush if it fails.
func (e *Engine) abandon(ctx context.Context, c *Claim) {
	_ = e.End(ctx, c, false)
}
