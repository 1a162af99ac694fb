package queue

import (
	"context"
	"time"
)

// The decisions of whether claims have ended that a planted error
// changes (see Bug): what a release of this process's proves for the
// claim chained above it (tip.go), and how a walk judges a session it
// reads (ended.go). As in planted_walk.go, each function is named by
// what it decides, and its body is the protocol's rule and then what
// the planted error makes of it; in a build without -tags dsync_planted
// it is the rule alone.

// Chained holds (tip.go).

// tipProves is the holds' tipProves (the grant rule for a claim chained
// on this process's release t). BugTipAnyMode chains any claim on a
// release that is not Clear; BugTipWeightIgnored chains a weighted claim
// on a weighted release of its limit without counting the weight left
// live below it; BugTipEndsAssumed takes the claims left live below such
// a release for ended (strong).
func (e *Engine) tipProves(w Terms, t tipRelease) (ok, strong bool, live []heldRef) {
	weighted := !t.Clear && chainsWeighted(w, t)
	if e.plant.tipAnyMode() && !t.Clear || e.plant.tipWeightIgnored() && weighted {
		return true, false, nil
	}
	ok, strong, live = e.holds.tipProves(w, t)
	return ok, strong || weighted && e.plant.tipEndsAssumed(), live
}

// leftNoneLive reports whether none of the claims a release of this
// process left live below it (live: those this engine has not seen end)
// may be live still: the release ends every walk, as a Clear one does
// (ownReleaseStops). BugOwnReleaseStops takes any weighted release of
// this process's for one.
func (e *Engine) leftNoneLive(live []heldRef) bool {
	return len(live) == 0 || e.plant.ownReleaseStops()
}

// endFound reads the end marker of r, a claim of key left live below a
// release, and reports whether it was found: a marker proves an end; one
// not found, or a read that failed, proves nothing (recheckLive).
// BugRecheckMissingEnds takes every read for an end.
func (e *Engine) endFound(ctx context.Context, key string, r heldRef) bool {
	_, found, err := e.store.Get(ctx, EndID(key, r.epoch, r.nonce))
	return err == nil && found || e.plant.recheckMissingEnds()
}

// Sessions read (ended.go).

// deadOnceMissing reports whether claim d's session, its documents found
// missing, counts as dead at once: only for a claim without a TTL
// (written by an older dsync); otherwise only once missing for the TTL
// (noteAbsent). BugAbsentIsDead: always.
func (j *judge) deadOnceMissing(d Doc) bool {
	return d.TTL <= 0 || j.plant.absentIsDead()
}

// absentAsOf is the time a read that found a session missing, sent at
// sent and answered at replied, counts that absence to: its send (the
// read may have landed long before its reply came, and the owner
// re-created its session since). BugAbsenceToReply counts to its reply.
func absentAsOf[T time.Duration | time.Time](j *judge, sent, replied T) T {
	if j.plant.absenceToReply() {
		return replied
	}
	return sent
}

// outageProves reports whether ev, the record of up-time read before the
// session of a claim whose session expired, its highest expiry known
// being exp, proves that session dead (judge_outage.go): always for a
// claim without a grace. BugOutageUncredited: always.
func (j *judge) outageProves(ev outageEvidence, exp time.Time) bool {
	return ev.dead(exp) || j.plant.outageUncredited()
}

// expiryCounts reports whether session s, found by a read sent at
// earliest possible server time earliest, can be judged by its expiry
// (judgedByExpiry): found with its first generation, or not expired.
// BugLostFirstIsDead judges every session found by its expiry.
func (j *judge) expiryCounts(s Session, earliest time.Time) bool {
	return s.HasFirst || !s.ExpiresAt.Before(earliest) || j.plant.lostFirstIsDead()
}

// runGoesOn reports whether a read that found a session missing, answered
// at replied, goes on run, the reads that found it missing before: if it
// replied at most two TTLs after the last of them was sent (noteAbsent).
// BugAbsenceNeverStale: however long after.
func (j *judge) runGoesOn(run absence, replied, ttl time.Duration) bool {
	return replied-run.lastSent <= 2*ttl || j.plant.absenceNeverStale()
}
