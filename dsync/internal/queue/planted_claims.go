package queue

import (
	"context"
	"time"
)

// The decisions of a claim's own records that a planted error changes
// (see Bug): how a claim ends (claim.go), what a prune relies on
// (claim.go), the heads confirmed at insert (holds.go), a Once's read
// under its hold (done.go), a session's renewals (session.go) and a
// lease's (lease.go), and what ReadExpired remembers (read_expired.go).
// As in planted_walk.go, each function is named by what it decides, and
// its body is the protocol's rule and then what the planted error makes
// of it; in a build without -tags dsync_planted it is the rule alone.

// endKind is the kind of the end marker of a claim that held (a release)
// or did not (a withdrawal, which says nothing of the claims below it).
// BugWithdrawAsRelease records every end as a release.
func (e *Engine) endKind(held bool) string {
	if held || e.plant.withdrawAsRelease() {
		return KindRelease
	}
	return KindWithdraw
}

// pruneBucket returns the bucket of the gate whose floor a prune of ks's
// segment relies on: the highest bucket b with the store's time
// PruneDelay past the start of b+1, among those this process knows a
// gate of (pruneGate). BugPruneEarly takes the last it knows at once.
func (e *Engine) pruneBucket(ks keyState) int64 {
	b := min(e.segments.bucket(e.clock.ServerNow().Earliest.Add(-e.cfg.PruneDelay))-1, ks.cover)
	if e.plant.pruneEarly() {
		return ks.cover
	}
	return b
}

// headID names claim c among the claims confirmed to hold at their
// insert: by its nonce, which no other claim has. BugHeadsByKey names it
// by its key, which another claim of this engine's may share.
func (h *holds) headID(c *Claim) string {
	if h.plant.headsByKey() {
		return c.Key
	}
	return c.Nonce
}

// DoneUnder reads the done record of c's key while c holds: the read a
// run must follow (done.go). BugOnceStaleRead reads nothing and answers
// what the read before the claim found: no record.
func (o *doneRecords) DoneUnder(ctx context.Context, c *Claim) (rec Doc, found bool, err error) {
	if o.plant.onceStaleRead() {
		return Doc{}, false, nil
	}
	return o.ReadDone(ctx, c.Key)
}

// keepsGen reports whether a renewal of a session's current generation
// that returned err leaves the next renewal on that generation (renew):
// only if it succeeded, as one of unknown outcome may be applied over a
// later one. BugRenewSameGen keeps the generation whatever err.
func (s *sessions) keepsGen(err error) bool {
	return err == nil || s.plant.renewSameGen()
}

// confirmedLate applies a renewal confirmed at now if it came at or past
// the lease's deadline (late): another process may have taken the lease
// over, so it retires (LeaseLate). BugLateConfirmExtends counts the
// renewal as if in time; BugLateConfirmKept ignores it but keeps the
// lease, whose next renewal is then due in the past.
func (l *Lease) confirmedLate(now time.Duration) (ev LeaseEvent, late bool) {
	if now < l.deadline || l.plantedLateConfirmExtends() {
		return ev, false
	}
	if l.plantedLateConfirmKept() {
		return LeaseKept, true
	}
	l.retired = true
	return LeaseLate, true
}

// remembers reports whether ReadExpired remembers a claim it reports
// expired, when its caller asks it to (remember). BugReadExpiredForgets
// never does.
func (j *judge) remembers(remember bool) bool {
	return remember && !j.plant.readExpiredForgets()
}

// provenDead reports whether ev proves a suspended session dead by the
// outage rule, with its x and Ê (Suspension.Check). BugResumeUnchecked
// never finds it so.
func (s *Suspension) provenDead(ev []UpSpan) (bool, error) {
	dead, err := s.rule.Dead(ev, s.exp.Add(-s.ttl), s.exp)
	return dead && !s.plant.resumeUnchecked(), err
}
