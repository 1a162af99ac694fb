package queue

import (
	"context"
	"time"
)

// The waiter's side of the outage rule (outage.go, doc_outage.go): a
// claim that carries a grace, on a store that keeps the record of up-time
// (driver.UptimeStore), is judged dead only if its session expired before
// the earliest possible server time at the judgement (the rule of a claim
// without a grace) and the record proves it dead: Dead(evidence, x, Ê),
// with Ê the session's highest expiry known after its read and x = Ê − TTL.
// The evidence is the store's record since Since(x) of the expiry known
// before the session read (a read since an earlier time holds all a later
// one would), read before the session is. A claim not proven dead is
// live: its waiter looks again a while later (lookAgain), when more of the
// record may be in. A claim without a grace, or on a store without the
// record, is judged as before, by its expiry alone.

// lookAgainFrac is the part of a claim's TTL after which a waiter looks
// again at a claim whose session expired but the record did not prove
// dead: the record grows with every renewal (every TTL/3 by default), and
// the rule needs an up-run of a TTL, so looking eight times per TTL adds
// at most TTL/8 to a takeover the record decides, at the cost of a read
// of the record and of the session at each look.
const lookAgainFrac = 8

// outageEvidence is what a judgement of one claim by the outage rule
// rests on: the rule of the claim's terms (on: the claim is judged by it),
// and the record of up-time read before its session.
type outageEvidence struct {
	on    bool
	rule  OutageRule
	ttl   time.Duration
	spans []UpSpan
}

// outageRule returns the outage rule claim d is judged by, and whether it
// is judged by one: d carries a grace, and the store keeps the record of
// up-time. A grace above MaxGrace (no engine records one: Config's check)
// counts as MaxGrace.
func (j *judge) outageRule(d Doc) (OutageRule, bool) {
	if d.Grace <= 0 || d.TTL <= 0 || j.uptime == nil {
		return OutageRule{}, false
	}
	r, err := NewOutageRule(d.TTL, min(d.Grace, MaxGrace))
	return r, err == nil
}

// dead reports whether ev proves the claim's session dead, its highest
// expiry known being exp: always for a claim not judged by the rule (its
// caller found it expired); never on a record the rule refuses (an
// inverted span: a store's error, which must not end a claim).
func (ev outageEvidence) dead(exp time.Time) bool {
	if !ev.on {
		return true
	}
	dead, err := ev.rule.Dead(ev.spans, exp.Add(-ev.ttl), exp)
	return err == nil && dead
}

// evidence reads the evidence for judging claim d by the outage rule, its
// session's highest expiry known before the read of that session being
// exp: nothing if d is not judged by it, else the store's record since
// Since(exp − TTL). It must be called before the session is read: the
// rule is safe only on evidence committed before that read, and still in
// the store when the owner's check reads it (doc_outage.go, O2). That is
// why this engine's own sessions' stamps, as it remembers them, are not
// evidence here: an emptying of the sessions collection deletes them from
// the store, while the engine remembers them until it renews each session
// again (TestWaiterEvidenceSurvivesAnEmptying).
func (j *judge) evidence(ctx context.Context, d Doc, exp time.Time) (outageEvidence, error) {
	rule, on := j.outageRule(d)
	if !on {
		return outageEvidence{}, nil
	}
	rec, err := j.uptime.ReadUptime(ctx, rule.Since(exp.Add(-d.TTL)))
	if err != nil {
		return outageEvidence{}, err
	}
	return outageEvidence{on: true, rule: rule, ttl: d.TTL, spans: rec.Spans}, nil
}

// judgeSession judges the session of claim d, whose expiry as known (b's)
// is earlier than earliest: the evidence of the outage rule first, then
// the session (sessionLives). If the session expired but the record does
// not prove it dead, and this engine can have its own session renewed at
// once (SetStamp), it has it renewed, and judges again, once: the renewal's
// stamp, applied after the expiry, is evidence the rule may need (a
// chain up to the expiry), which the renewals' schedule would bring up
// to a third of a TTL later. The evidence is read again after it, before
// the session, as the rule asks.
func (j *judge) judgeSession(ctx context.Context, d Doc, earliest time.Time, b Blocker) (live bool, _ Blocker, err error) {
	for stamped := false; ; stamped = true {
		// With a grace, the record of up-time is read before the session.
		ev, err := j.evidence(ctx, d, b.ExpiresAt)
		if err != nil {
			return false, Blocker{}, err
		}
		live, unproven, nb, err := j.sessionLives(ctx, d, earliest, b, ev)
		if !unproven {
			return live, nb, err
		}
		if stamped || !j.stampNow(ctx, d) {
			return true, nb, nil
		}
		earliest, b = j.clock.ServerNow().Earliest, j.blockerOf(d)
	}
}

// stampNow has this engine's own session renewed at once, if it can
// (SetStamp), waiting for the renewal at most an eighth of d's TTL (the
// look again's period); it reports whether a renewal came back.
func (j *judge) stampNow(ctx context.Context, d Doc) bool {
	f := j.stamp.Load()
	if f == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, d.TTL/lookAgainFrac)
	defer cancel()
	return (*f)(ctx)
}

// lookAgain is when, in server time, a waiter looks again at claim d whose
// session expired without the record proving it dead (see lookAgainFrac).
func (j *judge) lookAgain(d Doc) time.Time {
	return j.clock.ServerNow().Latest.Add(d.TTL / lookAgainFrac)
}

// Evidence is the record of up-time a reader read before the sessions of
// the claims it judges (ReadEvidence), for ReadExpired. Its zero value
// holds none: a claim judged by the outage rule is then never expired by
// a read (which is safe: a reader only reports).
type Evidence struct {
	spans []UpSpan
}

// ReadEvidence reads what a reader needs to judge docs by ReadExpired, its
// earliest possible server time being earliest: for the claims judged by
// the outage rule whose sessions' expiries known before their reads are
// past, the store's record (never this engine's own stamps as it
// remembers them: see evidence). It must be called before the sessions
// are read. It reads nothing if no claim of docs needs it.
func (j *judge) ReadEvidence(ctx context.Context, docs []Doc, earliest time.Time) (Evidence, error) {
	var ev Evidence
	var since time.Time
	need := false
	for _, d := range docs {
		rule, on := j.outageRule(d)
		exp := j.blockerOf(d).ExpiresAt
		if !on || !exp.Before(earliest) {
			// ReadExpired needs no evidence for it (its expiry known
			// only rises): a Queue read of claims without a grace
			// takes no lock of the sessions.
			continue
		}
		if s := rule.Since(exp.Add(-d.TTL)); !need || s.Before(since) {
			since = s
		}
		need = true
	}
	if !need {
		return ev, nil
	}
	rec, err := j.uptime.ReadUptime(ctx, since)
	if err != nil {
		return Evidence{}, err
	}
	ev.spans = rec.Spans
	return ev, nil
}

// readDeadByRecord reports whether ev proves claim d's session dead, its
// highest expiry known being exp (ReadExpired), when d is judged by the
// outage rule; true otherwise.
func (j *judge) readDeadByRecord(d Doc, exp time.Time, ev Evidence) bool {
	rule, on := j.outageRule(d)
	return j.outageProves(outageEvidence{on: on, rule: rule, ttl: d.TTL, spans: ev.spans}, exp)
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// SetStamp gives the engine a way to have its own session renewed at once
// (the Keeper's Stamp): a waiter that finds a claim's session expired but
// not proven dead has it called, and judges again after the renewal
// (judgeSession), so that a holder cut off alone is taken over about when
// its session expired, not up to a third of a TTL later. f reports whether
// a renewal sent after the call came back; it must return once ctx ends.
// Without it, the waiter looks again an eighth of a TTL later.
func (e *Engine) SetStamp(f func(ctx context.Context) bool) {
	e.judge.stamp.Store(&f)
}
