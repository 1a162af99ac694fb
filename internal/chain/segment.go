package chain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A key's queue is a series of segments. A segment starts when a process
// finds no live one: its first claim's epoch, the segment's base, is
// derived from the store's time (base), so that it lies above every epoch
// of every earlier segment, and the store can forget a key entirely
// (Sweep) without a later hold ever reusing a token.
//
// Which segment is live is decided by gates: one document per key and
// bucket of store time (driver.GateID), naming a segment. A gate's ID is
// exclusive, so at most one segment owns a bucket. A start inserts the
// gates of every bucket from the one before the earliest possible store
// time to the one after the latest, then its first claim, in one ordered
// insert: it succeeds only if no other segment owns any of those buckets.
// A process relies on a segment (inserts into it, holds in it) only while
// it knows a gate of that segment for a bucket b with the latest possible
// store time before end(b+1) − Margin: it is covered. Processes with live
// claims in a segment insert the gates of the next buckets as time goes
// on (Refresh), so a segment in use stays covered; one that nobody
// covers any more is over, and the next claim starts a new one above it.
// (See the package documentation for why two segments are never relied
// on at once, and why tokens still only grow.)

// errLapsed reports that a claim's segment is no longer covered, or is
// over: the claim was withdrawn, and its owner claims again (a new claim
// joins or starts the live segment).
var errLapsed = errors.New("chain: the key's segment lapsed")

// IsLapsed reports whether err says a claim was given up because its
// segment lapsed: claiming again is the remedy, and nothing was lost.
func IsLapsed(err error) bool { return errors.Is(err, errLapsed) }

// bucket returns the bucket of store time t.
func (e *Engine) bucket(t time.Time) int64 {
	return floorDiv(t.UnixNano(), int64(e.span()))
}

// bucketEnd returns the start of the bucket after b.
func (e *Engine) bucketEnd(b int64) time.Time {
	return time.Unix(0, (b+1)*int64(e.span()))
}

// base returns the first epoch of a segment that starts at store time t
// (at the earliest): Rate epochs per Quantum of store time since 1970.
func (e *Engine) base(t time.Time) uint64 {
	q := floorDiv(t.UnixNano(), int64(e.cfg.Quantum))
	if q < 1 {
		q = 1
	}
	return uint64(q) * e.cfg.Rate
}

// ceiling is the bound every epoch inserted at a latest possible store
// time L stays below: base(L + Margin). A segment started later than any
// process relied on this one begins at or above it (Margin ≥ Quantum).
func (e *Engine) ceiling(latest time.Time) uint64 {
	return e.base(latest.Add(e.cfg.Margin))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// covered reports whether ks relies on a segment whose coverage lasts
// past the latest possible store time now.
func (e *Engine) covered(ks keyState, latest time.Time) bool {
	if e.has(BugNoCoverage) {
		return ks.seg != 0
	}
	return ks.seg != 0 && !e.spanLost.Load() && latest.Before(e.coverEnd(ks))
}

// coverEnd is when ks's coverage ends, in store time.
func (e *Engine) coverEnd(ks keyState) time.Time {
	if ks.seg == 0 {
		return time.Time{}
	}
	return e.bucketEnd(ks.cover + 1).Add(-e.cfg.Margin)
}

// learnGate records gate g of key (a gate of g.Seg for bucket g.Bucket):
// coverage up to its bucket, and its floor. Knowledge of another segment
// is dropped: it belonged to a segment that is over. So is knowledge of
// a segment of the same number learnt in another history of the store
// (an emptying came between: segments of two histories share a number
// when they start in one quantum of store time): g's callers have read
// the protocol document after it, which names g's history (but Queue's
// and the floor reads', which learn only a gate of the history they
// know). A segment's gates carry floors that only rise with
// their buckets (refreshKey), so the floor known is that of the highest
// gate known.
func (e *Engine) learnGate(key string, g Doc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.spanLost.Load() {
		return // (checked under mu: loseSpan forgets every key under it)
	}
	ks := e.state(key)
	if ks.seg != g.Seg || !sameKnown(ks.history, g.Nonce) {
		*ks = keyState{seg: g.Seg, cover: g.Bucket, floor: g.Floor, history: g.Nonce}
		return
	}
	if ks.history == "" {
		ks.history = g.Nonce
	}
	ks.cover = max(ks.cover, g.Bucket)
	if g.Floor.Epoch > ks.floor.Epoch {
		ks.floor = g.Floor
	}
}

// dropCover forgets key's segment (and with it all that is known of the
// key): the next claim finds the live segment again.
func (e *Engine) dropCover(key string, seg uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ks := e.keys[key]; ks != nil && (seg == 0 || ks.seg == seg) {
		*ks = keyState{}
	}
}

// gate returns the gate of key's bucket b naming seg, with floor f, sent
// at sent in the store's history (history.go).
func gate(key string, seg uint64, b int64, f Floor, sent time.Time, history string) Doc {
	return Doc{ID: GateID(key, b), Key: key, Kind: KindGate, Seg: seg, Bucket: b, Floor: f, Sent: sent, Nonce: history}
}

// enter makes q's key covered: it starts a segment, in which case c is
// its first claim and holds at once, or it learns the live segment and
// returns c nil (q then claims in it). done reports that Claim returns
// (c, err).
func (q *claimRun) enter(ctx context.Context) (c *Claim, done bool, err error) {
	e := q.e
	if e.clock.ServerNow().Latest.Before(e.strayUntil(q.key)) {
		// A segment of another history owns the buckets a start needs.
		return nil, true, &BusyError{Key: q.key}
	}
	// The store's span and history as its protocol document names them
	// now: the start's gates record the history, and count only in it.
	history, err := e.confirmSpan(ctx)
	if err != nil {
		return nil, true, err
	}
	now := e.clock.ServerNow()
	seg := q.startBase(ctx, now.Earliest)
	lo, hi := e.bucket(now.Earliest)-1, e.bucket(now.Latest)+1
	if e.has(BugStartSkipsPrevBucket) {
		lo++
	}
	// Lowest bucket first, so that a start that meets a gate leaves its
	// own gates only below it: such a gate gives nobody coverage (see the
	// package documentation).
	var docs []Doc
	for b := lo; b <= hi; b++ {
		docs = append(docs, gate(q.key, seg, b, Floor{}, now.Latest, history))
	}
	q.history = history
	c = q.newClaim(seg, seg)
	d := q.claimDoc(c, now.Latest)
	docs = append(docs, d, shadowOf(d))
	gates := len(docs) - 2
	docs, landed := e.plantedStartDocs(docs, history)
	dup, err := e.store.InsertOrdered(ctx, docs)
	if landed >= 0 && dup == landed {
		dup = -1
	}
	if err == nil && (dup == -1 || dup == gates) {
		// Its gates landed: the segment is relied on only if the store
		// is still in the history they record, with this process's span.
		err = e.gateOfThisHistory(ctx, docs[0])
	}
	switch {
	case err != nil:
		return q.startFailed(ctx, c, err)
	case dup == -1:
		e.learnGate(q.key, docs[gates-1])
		e.learnNewest(q.key, seg)
		// The first claim of a segment: nothing is below it.
		c.clear, c.strong, c.Below = true, true, true
		e.confirmHead(c)
		return c, true, nil
	case dup == gates:
		// Every gate landed, and the first claim exists: this segment's
		// (an earlier start of this process, of unknown outcome).
		e.learnGate(q.key, docs[gates-1])
		e.learnNewest(q.key, seg)
		q.join(seg)
		q.base, q.known = seg, true
		return nil, false, nil
	case dup > gates:
		return nil, true, fmt.Errorf("chain: the shadow of %s exists: nonces are not unique", d.ID)
	}
	return q.meet(ctx, lo+int64(dup), hi)
}

// startBase returns the base of a segment q starts at the earliest
// possible store time earliest: its first epoch.
func (q *claimRun) startBase(ctx context.Context, earliest time.Time) uint64 {
	e := q.e
	seg := e.base(earliest)
	if e.has(BugCompactResetsTokens) {
		seg = 1 << 20
		for {
			d, found, gerr := e.store.Get(ctx, ClaimID(q.key, seg))
			if gerr != nil || !found || d.Kind != KindClaim {
				break
			}
			seg++
		}
	}
	return seg
}

// startFailed decides what a start whose insert, of c's claim and its
// gates, failed with err gives: Claim returns err, unless the store was
// emptied meanwhile (the start goes again).
func (q *claimRun) startFailed(ctx context.Context, c *Claim, err error) (*Claim, bool, error) {
	e := q.e
	// Gates and the claim may have landed: the claim is withdrawn, and
	// this process relies on none of them (the next claim starts or
	// joins again).
	e.abandon(ctx, c)
	e.dropCover(q.key, 0)
	if errors.Is(err, errOtherHistory) {
		// The store was emptied since the history was read: start
		// again in its new history (meeting these gates, if they
		// landed after the emptying).
		return nil, false, nil
	}
	return nil, true, err
}

// meet learns the live segment after a start met a gate of bucket from:
// the buckets from there to hi are owned. It is the one of the highest
// gate that still gives coverage, if that gate was sent in the store's
// history and the store's span is this process's.
func (q *claimRun) meet(ctx context.Context, from, hi int64) (c *Claim, done bool, err error) {
	e := q.e
	q.seg = 0
	for b := hi; b >= from; b-- {
		g, found, err := e.store.Get(ctx, GateID(q.key, b))
		if err != nil {
			return nil, true, err
		}
		if !found || g.Kind != KindGate || g.Seg == 0 {
			continue
		}
		if !e.clock.ServerNow().Latest.Before(e.bucketEnd(b + 1).Add(-e.cfg.Margin)) {
			// Its coverage is over, but its bucket is still too recent to
			// start in: try again once the store's time moves on.
			return nil, false, nil
		}
		if err := e.gateOfThisHistory(ctx, g); err != nil {
			if errors.Is(err, errOtherHistory) {
				// A start or refresh of a history before an emptying,
				// landed since: its segment is not this history's.
				e.noteStray(q.key, b)
				return nil, true, &BusyError{Key: q.key}
			}
			return nil, true, err
		}
		e.learnGate(q.key, g)
		q.join(g.Seg)
		return nil, false, nil
	}
	return nil, false, nil // gone since (dropped): try again
}

// join makes q claim in segment seg, knowing nothing of it yet but the
// gate just learnt, and the history it records.
func (q *claimRun) join(seg uint64) {
	q.seg, q.base, q.known, q.tip = seg, 0, false, tipRelease{}
	q.history = q.e.snapshot(q.key).history
}

// Refresh inserts, for each of keys, the gates of the buckets up to the
// one after the latest possible store time, so that its segment stays
// covered. keys are those of the holds whose validity has not ended: only
// holders refresh. A claim that comes to hold makes sure of its coverage
// then (ensureCover), and a process whose holds are over never extends a
// segment it may know only from a store since emptied. A key whose
// segment turns out to be over (a gate names another) is forgotten, and
// so is every key of a round whose gates the store's protocol document,
// read after they landed, does not confirm (confirmRound). It returns
// the keys whose segment lapsed or is over: their holds are lost.
func (e *Engine) Refresh(ctx context.Context, keys []string) (lapsed []string, err error) {
	keys = slices.Clone(keys)
	slices.Sort(keys) // in an order that replays
	keys = slices.Compact(keys)
	now := e.clock.ServerNow()
	want := e.bucket(now.Latest) + 1
	// A holder knows the history its segment is relied on in (the one it
	// learnt the segment in): its gates record it (history.go).
	known := e.knownHistory()
	var pending []string
	for _, key := range keys {
		if ks := e.snapshot(key); !e.covered(ks, now.Latest) {
			e.dropCover(key, ks.seg)
			lapsed = append(lapsed, key)
			continue
		}
		pending = append(pending, key)
	}
	// One request per bucket still to cover (usually one in all), with the
	// next gate of every key that needs one: renewing N holds costs the
	// same commands as renewing one.
	for len(pending) > 0 {
		var gates []Doc
		for _, key := range pending {
			// The gate of bucket b records a floor at least that of b−1
			// (which this process inserted or read): a segment's floors
			// only rise with its buckets, which is what makes pruning
			// below one safe.
			ks := e.snapshot(key)
			switch {
			case ks.seg == 0:
				lapsed = append(lapsed, key) // forgotten meanwhile: over
			case ks.cover < want:
				history := ks.history
				if history == "" {
					history = known // learnt from a gate of an older dsync
				}
				gates = append(gates, gate(key, ks.seg, ks.cover+1, e.nextFloor(ks), now.Latest, history))
			}
		}
		if len(gates) == 0 {
			break
		}
		errs := e.store.InsertEach(ctx, gates)
		pending = pending[:0]
		var landed []Doc
		for i, g := range gates {
			got, ok, gerr := e.gateLanded(ctx, g, errs[i])
			switch {
			case gerr != nil:
				err = gerr // unknown outcome: no coverage from it (it may land late)
			case !ok:
				lapsed = append(lapsed, g.Key)
			default:
				landed = append(landed, got)
			}
		}
		confirmed, over, cerr := e.confirmRound(ctx, landed)
		if cerr != nil {
			err = cerr
		}
		lapsed = append(lapsed, over...)
		for _, g := range confirmed {
			e.learnGate(g.Key, g)
			pending = append(pending, g.Key) // it may need a gate above g
		}
	}
	return lapsed, err
}

// confirmRound reads the store's protocol document after a round of a
// refresh's gates landed, and returns those it confirms: those that
// record the history it names, if it names this process's span. The
// keys of the others are forgotten and returned as over: their gates
// record a history before an emptying (a segment this process kept
// across it), or the store records another span since (loseSpan). Either
// way no start in the store's history need meet them. A missing document
// confirms nothing either (the store was emptied since: the next history
// is not this refresh's to begin). On an error of unknown outcome (the
// read failed) it confirms nothing and forgets nothing: the next refresh
// reads again.
func (e *Engine) confirmRound(ctx context.Context, landed []Doc) (confirmed []Doc, over []string, err error) {
	if len(landed) == 0 {
		return landed, nil, nil
	}
	p, found, err := e.store.Get(ctx, ProtocolID)
	if err != nil {
		return nil, nil, err
	}
	history := ""
	if found {
		if err = e.sameSpan(p); err == nil {
			history = p.Nonce
			e.learnHistory(history)
		} else {
			e.loseSpan(err)
		}
	}
	for _, g := range landed {
		if found && err == nil && e.sameHistory(g, history) {
			confirmed = append(confirmed, g)
			continue
		}
		e.dropCover(g.Key, g.Seg)
		over = append(over, g.Key)
	}
	return confirmed, over, err
}

// refreshKey is Refresh of one key: it reports whether key is still
// covered.
func (e *Engine) refreshKey(ctx context.Context, key string) (bool, error) {
	lapsed, err := e.Refresh(ctx, []string{key})
	return len(lapsed) == 0, err
}

// gateLanded learns from the outcome ierr of inserting gate g whether g's
// key may still be covered (ok), by got, the gate of g's bucket in the
// store; err reports an outcome unknown. A gate of g's bucket that exists
// already counts if it names g's segment (an earlier attempt of this
// process, or another holder's refresh); if it names another, the
// segment is over and forgotten. What counts is learnt only once the
// round is confirmed (confirmRound).
func (e *Engine) gateLanded(ctx context.Context, g Doc, ierr error) (got Doc, ok bool, err error) {
	if errors.Is(ierr, ErrExists) {
		got, found, gerr := e.store.Get(ctx, GateID(g.Key, g.Bucket))
		if gerr != nil {
			return Doc{}, true, gerr
		}
		if !found || got.Kind != KindGate || got.Seg != g.Seg {
			// Another segment owns the bucket: this one is over (or its
			// gate was dropped, which happens only to buckets long past:
			// this process lost track of time).
			e.dropCover(g.Key, g.Seg)
			return Doc{}, false, nil
		}
		return got, true, nil
	} else if ierr != nil {
		return Doc{}, true, ierr
	}
	return g, true, nil
}

// CoverEnd returns when this engine's coverage of key's segment ends, in
// store time (zero if it has none): a hold of key must end before it.
func (e *Engine) CoverEnd(key string) time.Time {
	if e.spanLost.Load() {
		return time.Time{}
	}
	return e.coverEnd(e.snapshot(key))
}
