package queue

import "context"

// The walk's decisions that a planted error changes (see Bug): one
// function each, named by what it decides, whose body is the protocol's
// rule and then what the planted error makes of it. The walk's files
// (walk*.go, full.go, claimrun.go) call them and name no planted error;
// in a build without -tags dsync_planted every switch here is the
// constant false (planted), so each function is the rule alone.

// Floors (floor.go). BugNoFloorProof ignores them.

// floorEnded reports whether epoch lies below floor f: every epoch there
// has ended, and may have been pruned. A walk that reaches it ends there
// (underFloor); a Claim that knows no higher epoch goes on from the floor
// (findBase).
func (e *Engine) floorEnded(epoch uint64, f Floor) bool {
	return epoch < f.Epoch && !e.plant.noFloorProof()
}

// floorBars reports whether an insert of epoch would land at or below
// floor f, where epochs may have been pruned: the Claim goes on from the
// floor instead (insertable).
func (e *Engine) floorBars(epoch uint64, f Floor) bool {
	return epoch <= f.Epoch && !e.plant.noFloorProof()
}

// clearsFloor reports whether c's own claim lies above floor f, or is f's
// claim (its epoch, with its nonce); if not, c's insert landed in a hole
// pruning left (ownFloorCheck).
func (e *Engine) clearsFloor(c *Claim, f Floor) bool {
	return c.Epoch > f.Epoch || c.Epoch == f.Epoch && c.Nonce == f.Nonce || e.plant.noFloorProof()
}

// refloorDue reports whether c's walk passed, in this walk, a live claim
// below the one right below c: a prune may have deleted the marker of a
// claim between them after the walk's floor check, so refloor reads the
// gate again.
func (e *Engine) refloorDue(c *Claim) bool {
	if e.plant.noFloorProof() {
		return false
	}
	for _, p := range c.passed {
		if p.walk == c.walks && p.d.Epoch < c.Epoch-1 {
			return true
		}
	}
	return false
}

// prunableBelow reports whether epoch, at which c's walk is about to
// wait, lies below an ended or passed claim (not right below c, which is
// never pruned while c is live): a claim there may have lost its marker
// to a prune after this walk's floor check (liveBelow).
func (e *Engine) prunableBelow(c *Claim, epoch uint64) bool {
	return epoch < c.Epoch-1 && !e.plant.noFloorProof()
}

// provenAbove reports whether the insert of epoch is proven above every
// pruned epoch whatever its reply's timing: the segment's first epoch,
// while the key has no floor (round).
func (q *claimRun) provenAbove(epoch uint64, ks keyState) bool {
	return epoch == q.seg && ks.floor.Epoch == 0 || q.e.plant.noFloorProof()
}

// keptOverFloor reports whether claim d, which a walk passed live, may
// still be live over floor f: above it, or f's own claim, which held
// with every lower claim ended and may hold still (dropBelowFloor).
// BugFloorClaimDropped drops f's own claim.
func (e *Engine) keptOverFloor(d Doc, f Floor) bool {
	return d.Epoch > f.Epoch || d.Epoch == f.Epoch && !e.plant.floorClaimDropped()
}

// countUnread appends to live the claims full did not read again (rest):
// counted live, as any of them may be. BugFullDropsUnread drops them, as
// if they had ended.
func (e *Engine) countUnread(live, rest []passedClaim) []passedClaim {
	if e.plant.fullDropsUnread() {
		return live
	}
	return append(live, rest...)
}

// Coverage (segment.go). BugNoCoverage relies on a segment once known.

// knowsCover reports whether this process knows a gate, learnt in the
// history c records, that covers c's segment now (ks: its knowledge of
// c's key): coverFloor then relies on that gate's floor, unread.
func (e *Engine) knowsCover(ks keyState, c *Claim) bool {
	return ks.seg == c.Seg && e.segments.sameKnown(ks.history, c.History) &&
		e.segments.covered(ks, e.clock.ServerNow().Latest) || e.plant.noCoverage()
}

// laterSegment reports whether claim d, which c's walk read above the
// first epoch of c's segment, is of another segment: a later segment
// started, so c's is over (walkDown).
func (e *Engine) laterSegment(c *Claim, d Doc) bool {
	return d.Seg != c.Seg && !e.plant.noCoverage()
}

// gateDue reports whether c's walk reached the first epoch of its
// segment: nothing lies below c in it, so only the segment's gates keep
// another segment from holding, and the gate is read before c holds
// (confirmReads).
func (e *Engine) gateDue(c *Claim, first uint64) bool {
	return c.checked <= first && !e.plant.noCoverage()
}

// What the store confirms. BugTrustCache holds on what the engine
// learned without it; BugRunOwnUnchecked takes any run for a
// confirmation of the walker's own claim.

// missingBelow decides what a missing claim of epoch below c means
// (judgeMissing). BugTrustCache takes it for a claim pruned below a
// floor, unread: everything below it has ended.
func (e *Engine) missingBelow(ctx context.Context, c *Claim, epoch uint64) error {
	if e.plant.trustCache() {
		c.clear, c.strong = true, true
		return nil
	}
	return e.judgeMissing(ctx, c, epoch)
}

// floorCounts reads whether floor f of c's key counts (floor.go:
// reader.floorCounts). BugTrustCache counts every floor it reads.
func (e *Engine) floorCounts(ctx context.Context, c *Claim, f Floor) (bool, error) {
	_, counts, err := e.rd.floorCounts(ctx, c.Key, f)
	return counts || e.plant.trustCache(), err
}

// confirmedByRun reports whether c's own claim was confirmed by the last
// run its walk read, with no read of this engine's in flight when it was
// sent, nor sent or answered since its reply (of any claim's: a read of
// another goroutine merely costs c a confirmOwn).
func (e *Engine) confirmedByRun(c *Claim) bool {
	switch {
	case e.plant.trustCache():
		return true
	case e.plant.runOwnUnchecked():
		return c.run != nil
	}
	return e.rd.confirmed(c.runSeq)
}

// runHasOwn reports whether run r, which reaches c's epoch, holds c's own
// claim, with its nonce: if not, the store lost the key's history since
// c's insert (readRun).
func (e *Engine) runHasOwn(r *run, c *Claim) bool {
	own, ok := r.claim(c.Epoch)
	return ok && own.Nonce == c.Nonce || e.plant.runOwnUnchecked()
}

// chainsOnTip reports whether q's next insert, right above this process's
// release q.tip, carries that release's claim's shadow (chained: see
// Claim), given whether the release's hold proves the inserted claim
// holding (proves: tipProves). BugTrustCache never chains: it holds on
// the release unconfirmed (heldOnInsert).
func (q *claimRun) chainsOnTip(proves bool) bool {
	return q.onTip() && proves && !q.e.plant.trustCache()
}

// heldOnInsert records what c's insert proved (landed): if its chained
// shadow's duplicate key showed the claim below, this process's release,
// still in the store (chained, dup == 2), c holds at once, as that
// release's hold proves (holdOnTip). BugTrustCache has c hold at once,
// with every lower claim ended, whenever it lies right above that
// release, with nothing confirmed.
func (q *claimRun) heldOnInsert(ctx context.Context, c *Claim, chained bool, dup int) {
	switch {
	case q.e.plant.trustCache() && q.onTip():
		c.clear, c.strong, c.Below = true, true, true
		q.e.holds.confirmHead(c)
	case chained && dup == 2:
		q.holdOnTip(ctx, c)
	}
}

// claimNonce returns the nonce of q's next claim: a new ID, which names
// its end marker apart from every other claim's. BugEndBySession names
// it by its session (after drawing the ID, as the rule does).
func (q *claimRun) claimNonce() string {
	id := q.e.cfg.NewID()
	if q.e.plant.endBySession() {
		return q.session
	}
	return id
}
