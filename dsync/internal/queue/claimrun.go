package queue

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
// before it looks for the key's newest claim (reads by ID, galloping up
// from the last epoch lost, which exists: climb, floor.go) instead of
// trying the next. Four covers the queue of a handful of processes taking
// turns. (Looking after the first loss, or the second, did no better with
// four readers on FerretDB: the claim inserted after the look still
// races those of the other readers, who look at the same time.)
const maxDups = 4

// claimRun is the state of one Claim call: where it inserts next and what
// it knows of the epoch below.
type claimRun struct {
	e                   *Engine
	key, owner, session string
	waiter              string // Ref.Waiter of its claims
	terms               Terms
	try                 bool
	base                uint64     // the epoch known to exist below the next insert
	known               bool       // base is known (false: read the newest claim first)
	tip                 tipRelease // this process's release of base, if known
	seg                 uint64     // the segment claimed in (segment.go)
	history             string     // the store's history seg was learnt in (keyState.history)
	dups                int        // epochs lost in a row
	newestRead          bool       // this run read the newest claim once
	topRead             bool       // a try read the newest claim (readTop, lostTry)
	topEnded            bool       // the newest claim a try read last had ended (judgeTop)
	chased              int        // races a try lost to claims that had ended by its read (lostTry)
	climbBase           bool       // read the claims above base before the next insert
	ttl                 time.Duration
	exp                 time.Time
}

// run is Claim's work.
func (q *claimRun) run(ctx context.Context) (*Claim, error) {
	e, key, try := q.e, q.key, q.try
	q.load()
	q.ttl, q.exp = e.sessions.claimTerms(q.session)
	if q.ttl > e.segments.span() {
		// A hold must end before its key's coverage can (segment.go):
		// coverage reaches about two spans ahead when it starts.
		return nil, fmt.Errorf("the TTL %v is above the bucket span %v", q.ttl, e.segments.span())
	}
	for round := range maxClaimRounds {
		if ks := e.keys.snapshot(key); !e.segments.covered(ks, e.clock.ServerNow().Latest) {
			c, done, err := q.enter(ctx)
			if done {
				return c, err
			}
			if q.seg == 0 {
				continue // the gate went: start again
			}
		} else if q.seg != ks.seg || q.history != ks.history {
			q.load()
		}
		if try && q.tip.Epoch == 0 && !q.topRead {
			q.topRead = true
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
	ks := q.e.keys.snapshot(q.key)
	q.seg, q.history, q.base, q.known, q.tip = ks.seg, ks.history, ks.newest, ks.newest > 0, tipRelease{}
	if ks.hasTip() {
		q.tip = ks.tip
	}
}

// newClaim returns q's claim of epoch in segment seg.
func (q *claimRun) newClaim(epoch, seg uint64) *Claim {
	return &Claim{Ref: Ref{Key: q.key, Owner: q.owner, Session: q.session, Nonce: q.claimNonce(), Epoch: epoch, Seg: seg, Terms: q.terms,
		History: q.history, Waiter: q.waiter}, checked: epoch}
}

// claimDoc returns c's claim document, sent at the latest possible store
// time now.
func (q *claimRun) claimDoc(c *Claim, now time.Time) Doc {
	e := q.e
	return Doc{ID: ClaimID(q.key, c.Epoch), Key: q.key, Epoch: c.Epoch, Seg: c.Seg, Kind: KindClaim, Nonce: c.Nonce,
		Session: q.session, Owner: q.owner, TTL: q.ttl, Exp: q.exp, Grace: e.sessions.Grace(), Sent: now, Host: e.cfg.Host, PID: e.cfg.PID,
		Mode: q.terms.Mode, Weight: q.terms.Weight, Limit: q.terms.Limit, History: c.History, Waiter: c.Waiter}
}

// round makes one insert attempt; done reports that Claim returns (c, err).
func (q *claimRun) round(ctx context.Context, round int) (c *Claim, done bool, err error) {
	e := q.e
	ks := e.keys.snapshot(q.key)
	if ks.seg != q.seg || ks.history != q.history {
		// The segment went (dropped), or what q knows of it was learnt
		// in another history of the store: enter again, or load.
		return nil, false, nil
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
	if epoch >= e.segments.ceiling(now) {
		// More than Rate epochs in a Quantum: a later segment's base
		// might not clear them. Wait for the store's time to move on.
		return nil, true, &BusyError{Key: q.key}
	}
	// The proof that the insert lands above every pruned epoch: the gate
	// that covers the segment now, and its floor (see floor.go).
	checked := e.clock.Mono()
	ks = e.keys.snapshot(q.key)
	if ks.history != q.history || !q.insertable(ks, epoch, now) {
		return nil, false, nil
	}
	proven := q.provenAbove(epoch, ks)
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
		return q.epochTaken(ctx, epoch)
	default:
		e.abandon(ctx, c)
		e.keys.forget(q.key)
		return nil, true, err
	}
}

// findBase settles the epoch q inserts above: what q knows below the key's
// floor is dropped, and what it does not know is read (the key's newest
// claim), unless the segment's first epoch is worth a try. again: the
// newest claim showed q's segment over, so the Claim loop enters again.
func (q *claimRun) findBase(ctx context.Context, round int, ks keyState) (again bool, err error) {
	if q.known && q.e.floorEnded(q.base, ks.floor) {
		// What this run knows lies below the key's floor, where epochs may
		// be pruned: go on from the floor.
		q.known = false
	}
	if q.known && q.climbBase {
		if ks.gap == 0 {
			return q.climbFromBase(ctx)
		}
		// Below a gap the next claim starts under it (top): climbing
		// from the epoch lost would only land above it again.
		q.climbBase, q.known = false, false
	}
	if !q.known && (round > 0 || ks.gap > 0 || ks.floor.Epoch > 0) {
		return q.baseOnNewest(ctx)
	}
	return false, nil
}

// climbFromBase reads up from q's base, which exists, to the highest
// claim it reaches by point reads (climb), and makes it the base: the
// next insert follows an epoch seen to exist (F1) whatever the reads
// found. again: a claim of a later segment showed q's segment over.
func (q *claimRun) climbFromBase(ctx context.Context) (again bool, err error) {
	e := q.e
	q.climbBase = false
	d, _, err := e.rd.climb(ctx, q.key, Doc{Key: q.key, Epoch: q.base, Seg: q.seg, Kind: KindClaim})
	if err != nil {
		q.keepClimbed(d, true)
		return false, err
	}
	if d.Seg != q.seg {
		e.keys.dropCover(q.key, q.seg)
		q.seg = 0
		return true, nil
	}
	if d.Epoch > q.base {
		e.keys.learnNewest(q.key, d.Epoch)
		q.base, q.tip = d.Epoch, tipRelease{}
	}
	return false, nil
}

// insertable reports whether the coverage ks, known now, proves an insert
// of epoch above every pruned epoch: the segment is covered, and epoch
// lies above its gate's floor. If not, the Claim loop enters the segment
// again, or goes on from the floor.
func (q *claimRun) insertable(ks keyState, epoch uint64, now time.Time) bool {
	e := q.e
	if ks.seg != q.seg || !e.segments.covered(ks, now) {
		return false // the coverage ended meanwhile: enter again
	}
	if e.floorBars(epoch, ks.floor) {
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
	// Only a release whose claim's hold proves that c holds (tip.go).
	proves, _, _ := e.tipProves(q.terms, q.tip)
	chained = q.chainsOnTip(proves)
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
		err = fmt.Errorf("the shadow of %s exists: nonces are not unique", d.ID)
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
	e.keys.learnNewest(q.key, c.Epoch)
	e.keys.noteMine(c, d.Sent)
	// c holds at once if its chained shadow proved the claim below still
	// stored; otherwise (the shadow was missing: the store lost the claim
	// below, or never had its shadow) the walk reads what it needs.
	q.heldOnInsert(ctx, c, chained, dup)
	return c, true, nil
}

// holdOnTip has c hold at once: its insert, right above this process's
// release q.tip, proved the release's claim still in the store (its
// chained shadow's duplicate key), so what that claim's hold proved, c's
// walk would find (with every lower claim ended if those it left live
// have ended, as this engine knows or, now and then, reads: recheckLive).
func (q *claimRun) holdOnTip(ctx context.Context, c *Claim) {
	e := q.e
	if q.tip.belowKnown && q.terms.Mode == Weighted {
		e.recheckLive(ctx, q.key, q.tip.below)
	}
	_, strong, live := e.tipProves(q.terms, q.tip)
	c.clear, c.strong, c.Below = true, strong, strong
	e.holds.noteHeld(c, live)
	e.holds.confirmHead(c)
}

// onTip reports whether q's next insert lands right above this process's
// release q.tip, in q's segment.
func (q *claimRun) onTip() bool { return q.tip.Epoch == q.base && q.base >= q.seg }

// aboveFloor reports, after a claim's insert of epoch was confirmed,
// whether the coverage this process knows now proves it above every
// pruned epoch: the segment is covered, and epoch lies above its gate's
// floor. If not, the claim must be given up, and the next insert goes on
// from the floor.
func (q *claimRun) aboveFloor(epoch uint64) bool {
	e := q.e
	ks := e.keys.snapshot(q.key)
	if ks.seg != q.seg || !e.segments.covered(ks, e.clock.ServerNow().Latest) {
		return false // the Claim loop enters the segment again
	}
	if epoch <= ks.floor.Epoch {
		q.known = false
		return false
	}
	return true
}
