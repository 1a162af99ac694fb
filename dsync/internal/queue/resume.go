package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The owner's side of the outage rule (outage.go, doc_outage.go). An
// owner whose engine has an outage grace, on a store that keeps the
// record of up-time, may suspend its session at its local deadline
// (Lease.Suspend) instead of retiring it: its holds are lost there as
// before, but its claims are left unended. Once a renewal it sends
// afterwards is confirmed, it checks (Suspension.Check) whether a waiter
// may have found the session dead: if no check can show that, it resumes
// the session (Lease.Resume) with the same claims and tokens; if one
// does, it retires the session and marks its claims dead (MarkDead).

// confirmed is a confirmed open or renewal of a session: the expiry it
// stored, and when its reply came (local monotonic, read after it).
type confirmed struct {
	replied time.Duration
	exp     time.Time
}

// confirmsKept is how many of a session's newest confirmed opens and
// renewals it keeps (renewal.confirms): a lease is suspended at most a
// renewal or two after its deadline (renewals of a session wait for each
// other, and none is sent past the deadline), and Engine.Suspend reads
// them at once.
const confirmsKept = 8

// noteConfirmed records a confirmed open or renewal that stored exp,
// replied by replied; sessions.mu is held.
func (r *renewal) noteConfirmed(replied time.Duration, exp time.Time) {
	if len(r.confirms) == confirmsKept {
		r.confirms = append(r.confirms[:0], r.confirms[1:]...)
	}
	r.confirms = append(r.confirms, confirmed{replied, exp})
}

// expiryConfirmedBy returns the highest expiry of session confirmed by an
// open or renewal whose reply came before deadline (local monotonic), and
// whether one is still known.
func (s *sessions) expiryConfirmedBy(session string, deadline time.Duration) (exp time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.renewals[session]
	if r == nil {
		return time.Time{}, false
	}
	for _, c := range r.confirms {
		if c.replied < deadline && c.exp.After(exp) {
			exp, ok = c.exp, true
		}
	}
	return exp, ok
}

// ResumeVerdict is what a resume check found (Suspension.Check).
type ResumeVerdict int

const (
	// ResumeWait: not decided (a read failed, the store's record is
	// incomplete, the coverage of a key is not known to last, or the
	// check ended too late for its renewal): check again after a later
	// renewal, or give up (retire; MarkDead).
	ResumeWait ResumeVerdict = iota
	// ResumeResumed: the lease is relied on again (Lease.Resume), with
	// the same claims.
	ResumeResumed
	// ResumeDead: a waiter may have found the session dead, or a claim
	// of it has ended or is gone: retire the lease and mark the claims
	// dead (MarkDead).
	ResumeDead
)

func (v ResumeVerdict) String() string {
	switch v {
	case ResumeWait:
		return "wait"
	case ResumeResumed:
		return "resumed"
	case ResumeDead:
		return "dead"
	}
	return fmt.Sprintf("ResumeVerdict(%d)", int(v))
}

// Suspension is a suspended session of this engine, and the claims that
// held in it when it was suspended: what its resume check reads and
// judges. Its methods are safe for one goroutine at a time.
type Suspension struct {
	*plant
	store   Store
	uptime  driver.UptimeStore
	clock   Times
	segs    *segments
	own     func() []UpSpan
	ends    *ends
	session string
	rule    OutageRule
	ttl     time.Duration
	// mono reads the clock of the lease's times (SuspendOn).
	mono func() time.Duration
	// exp is Ê: the highest expiry the store confirmed to this engine by
	// a reply before the lease's deadline (Suspend).
	exp    time.Time
	claims []Ref
}

// Suspend returns the suspension of session, whose lease l is
// suspended (Lease.Suspend), with the claims that held in it. Its Ê is the
// highest expiry confirmed by an open or renewal whose reply came before
// l's deadline: each of those landed before any waiter could find the
// session expired (the lease counted every renewal that set a deadline,
// each replying before the deadline then in force, itself before a waiter
// could find the expiry of the renewal that set it past), so a waiter
// that marks the session dead judges with an expiry at least Ê
// (doc_outage.go, O3). It fails for an engine without an outage grace or
// on a store without the record of up-time, for a lease not suspended,
// and for a session whose confirmations this engine no longer knows: its
// caller then retires the lease as without a grace.
func (e *Engine) Suspend(session string, l *Lease, claims []Ref) (*Suspension, error) {
	return e.SuspendOn(session, l, nil, claims)
}

// SuspendOn is Suspend for a lease whose times are readings of mono, its
// owner's clock, rather than of the engine's (Times.Mono; nil: the
// engine's). Both clocks must count the same elapsed time, from origins
// of their own (a keeper's lease counts from the keeper's start). Ê is
// then the highest expiry confirmed by a reply before the lease's
// deadline taken to the engine's clock, the engine's clock read first:
// the gap between the two readings can only move that deadline earlier,
// and so leave out a confirmation, never count one that replied after it
// (a smaller Ê only makes the check find dead sooner: doc_outage.go, O4).
// The check then resumes the lease by mono (Check).
func (e *Engine) SuspendOn(session string, l *Lease, mono func() time.Duration, claims []Ref) (*Suspension, error) {
	deadline := l.Deadline()
	if mono == nil {
		mono = e.clock.Mono
	} else {
		eng := e.clock.Mono()
		deadline = eng - (mono() - deadline)
	}
	if e.sessions.uptime == nil {
		return nil, errors.New("suspend: no outage grace, or a store without the record of up-time")
	}
	if !l.Suspended() {
		return nil, errors.New("suspend: the lease is not suspended")
	}
	ttl, _ := e.claimTerms(session)
	exp, ok := e.expiryConfirmedBy(session, deadline)
	if !ok || ttl <= 0 {
		return nil, fmt.Errorf("suspend: session %s's confirmed renewals are no longer known", session)
	}
	rule, err := NewOutageRule(ttl, e.sessions.grace)
	if err != nil {
		return nil, err
	}
	return &Suspension{plant: e.plant, store: e.store, uptime: e.sessions.uptime, clock: e.clock, segs: e.segments,
		own: e.ownStamps, ends: e.ends, session: session, rule: rule, ttl: ttl, mono: mono, exp: exp, claims: append([]Ref(nil), claims...)}, nil
}

// Expiry is Ê, the expiry the check judges with (see Suspend).
func (s *Suspension) Expiry() time.Time { return s.exp }

// Claims are the claims the suspension resumes, or marks dead.
func (s *Suspension) Claims() []Ref { return append([]Ref(nil), s.claims...) }

// Check is the resume check of lease l, suspended (Lease.Suspend), after
// a renewal of its session sent at sent (on the lease's clock: SuspendOn)
// was confirmed.
// It must be called after that confirmation: the store's record it reads
// then holds every stamp a waiter read before the renewal landed
// (doc_outage.go, O2). It reads, in order, the record of up-time since
// x − H (x = Ê − TTL) and adds this engine's own stamps; the session,
// which must be found with its first generation; each claim, which must
// be found with its nonce and without an end marker. It resumes l (the
// same claims, a deadline counted from sent) only if all of that holds,
// no session document unexpired since x − H lacks the record (one of a
// dsync that keeps none, whose waiters judge by expiry alone), the
// coverage of every claim's key lasts past the latest possible store
// time now, the record does not prove the session dead by the outage
// rule with x and Ê, and the check ends before l's new deadline. Its
// error says why it did not resume (nil when it did).
func (s *Suspension) Check(ctx context.Context, l *Lease, sent time.Duration) (ResumeVerdict, error) {
	if !l.Suspended() {
		return ResumeWait, errors.New("resume check: the lease is not suspended")
	}
	ev, err := s.evidence(ctx)
	if err != nil {
		return ResumeWait, err
	}
	if v, err := s.readBack(ctx); v != ResumeResumed {
		return v, err
	}
	dead, err := s.provenDead(ev.Spans)
	switch {
	case err != nil:
		return ResumeWait, fmt.Errorf("resume check: %w", err)
	case dead:
		return ResumeDead, fmt.Errorf("resume check: the store's record of up-time proves session %s dead (expiry %v)", s.session, s.exp)
	case ev.Unmarked:
		return ResumeWait, errors.New("resume check: a session document unexpired since the outage keeps no record of up-time")
	}
	if err := s.covered(ctx); err != nil {
		return ResumeWait, err
	}
	if !l.Resume(sent, s.mono()) {
		return ResumeWait, errors.New("resume check: ended past the deadline its renewal would give")
	}
	return ResumeResumed, nil
}

// evidence reads the store's record of up-time since x − H, with this
// engine's own stamps added.
func (s *Suspension) evidence(ctx context.Context) (driver.Uptime, error) {
	rec, err := s.uptime.ReadUptime(ctx, s.rule.Since(s.exp.Add(-s.ttl)))
	if err != nil {
		return driver.Uptime{}, fmt.Errorf("resume check: reading the record of up-time: %w", err)
	}
	rec.Spans = append(rec.Spans, s.own()...)
	return rec, nil
}

// readBack reads the session and each claim back: ResumeResumed if they
// are all in place, ResumeDead if one is gone or a claim has ended, and
// ResumeWait on a failed read. The claims are read side by side
// (readClaims): the check must end before the deadline its renewal
// gives, and on a slow store two reads per claim, one after another,
// would not.
func (s *Suspension) readBack(ctx context.Context) (ResumeVerdict, error) {
	sess, found, err := s.store.GetSession(ctx, s.session)
	switch {
	case err != nil:
		return ResumeWait, fmt.Errorf("resume check: reading session %s: %w", s.session, err)
	case !found || !sess.HasFirst:
		// Dropped (or its first generation lost): what its documents
		// held may be gone, and its claims judged by their absence.
		return ResumeDead, fmt.Errorf("resume check: session %s found without its first generation", s.session)
	}
	return s.readClaims(ctx)
}

// readClaims reads each claim of the suspension and its end marker, the
// claims side by side (fanOut): ResumeDead if one is gone or has ended
// (whatever else failed: that claim is over), else ResumeWait if a read
// failed, else ResumeResumed. Each claim's two reads keep their order:
// the claim, then its end marker.
func (s *Suspension) readClaims(ctx context.Context) (ResumeVerdict, error) {
	type result struct {
		v   ResumeVerdict
		err error
	}
	results := make([]result, len(s.claims))
	branches := make([]func(context.Context), len(s.claims))
	for i, c := range s.claims {
		branches[i] = func(ctx context.Context) {
			v, err := s.readClaim(ctx, c)
			results[i] = result{v, err}
		}
	}
	fanOut(ctx, s.store, branches)
	out := result{v: ResumeResumed}
	for _, r := range results {
		switch {
		case r.v == ResumeDead:
			return r.v, r.err
		case r.v == ResumeWait && out.v == ResumeResumed:
			out = r
		}
	}
	return out.v, out.err
}

// readClaim reads claim c and then its end marker back (see readClaims).
func (s *Suspension) readClaim(ctx context.Context, c Ref) (ResumeVerdict, error) {
	d, found, err := s.store.Get(ctx, ClaimID(c.Key, c.Epoch))
	if err != nil {
		return ResumeWait, fmt.Errorf("resume check: reading %s#%d: %w", c.Key, c.Epoch, err)
	}
	if !found || d.Nonce != c.Nonce {
		return ResumeDead, fmt.Errorf("resume check: claim %s#%d is gone from the store", c.Key, c.Epoch)
	}
	m, ended, err := s.store.Get(ctx, EndID(c.Key, c.Epoch, c.Nonce))
	if err != nil {
		return ResumeWait, fmt.Errorf("resume check: reading %s#%d's end: %w", c.Key, c.Epoch, err)
	}
	if ended {
		return ResumeDead, fmt.Errorf("resume check: claim %s#%d has ended (%s)", c.Key, c.Epoch, m.Kind)
	}
	return ResumeResumed, nil
}

// covered checks that the coverage of every claim's key lasts past the
// latest possible store time now: a resumed hold must not outlive its
// segment's coverage, any more than a hold renewed in time (Lease.SetCap
// bounds the deadline to it). A coverage this engine forgot (a reset
// found on another key forgets every key: doc_types.go, I1) is read
// again from the store (segments.relearnCover): otherwise the check
// could never pass, and a hold the outage did not end would be lost once
// the record proved its session dead.
func (s *Suspension) covered(ctx context.Context) error {
	latest := s.clock.ServerNow().Latest
	for _, c := range s.claims {
		end := s.segs.CoverEnd(c.Key)
		if end.IsZero() {
			if err := s.segs.relearnCover(ctx, c); err != nil {
				return fmt.Errorf("resume check: the coverage of %s is not known: %w", c.Key, err)
			}
			end = s.segs.CoverEnd(c.Key)
		}
		if end.IsZero() || !latest.Before(end) {
			return fmt.Errorf("resume check: the coverage of %s is not known to last (ends %v)", c.Key, end)
		}
	}
	return nil
}

// MarkDead inserts the dead marker of each claim of the suspension, once
// its lease l has been retired, and tells each that lands to the OnLanded
// hook (its waiters are woken): its owner stopped trusting the session
// (rule 11: a dead marker only ends claims their owner stopped relying
// on, so one landing late, or twice, ends nothing that holds). A marker
// of unknown outcome is left to the end queue (Flush) to send again.
func (s *Suspension) MarkDead(ctx context.Context, l *Lease) error {
	if !l.Retired() {
		return errors.New("mark dead: the lease is not retired")
	}
	var errs []error
	for _, c := range s.claims {
		dead := Doc{ID: EndID(c.Key, c.Epoch, c.Nonce), Key: c.Key, Epoch: c.Epoch, Kind: KindDead, Nonce: c.Nonce,
			Session: s.session, Sent: s.clock.ServerNow().Latest}
		if err := s.store.Insert(ctx, dead); err != nil && !errors.Is(err, ErrExists) {
			s.ends.pend(dead)
			errs = append(errs, err)
			continue
		}
		// Its waiters are woken, as for every end that lands (OnLanded):
		// the session's stored expiry may have risen past the outage (a
		// renewal of the suspended session), and a waiter not woken
		// looks again only then.
		s.ends.tellLanded(dead)
	}
	return errors.Join(errs...)
}
