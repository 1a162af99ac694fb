package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// sessions are the sessions this engine opened, and where each is renewed
// next (see RenewSession), with what its claims carry. An entry goes once
// its session has gone unrenewed for two of its TTLs: its owner's
// deadline has passed by then. Its lock is held only inside its methods,
// never across a request.
type sessions struct {
	*plant
	store Store
	clock Times
	newID func() string
	// uptime renews with the record of up-time, when the engine has an
	// outage grace and the store keeps the record (session_uptime.go);
	// nil otherwise, and grace is then zero.
	uptime driver.UptimeStore
	grace  time.Duration

	mu       sync.Mutex
	renewals map[string]*renewal
}

// renewal is where the next renewal of a session goes: an update of the
// document of generation gen, or, with insert set, first the insert of
// that generation. mu is held through each renewal, so that two renewals
// of one session are never in flight together. It is a channel of one
// slot, not a sync.Mutex: a goroutine waiting on a sync.Mutex is not
// durably blocked in a testing/synctest bubble, so a renewal waiting for
// another whose request waits on fake time would stop the bubble's clock
// for good (the public-API simulation, integration/apisim, met it).
type renewal struct {
	mu     chan struct{}
	gen    int
	insert bool
	ttl    time.Duration
	// Guarded by sessions.mu:
	last     time.Duration // local monotonic: the last renewal's send
	sentExp  time.Time     // the expiry the last renewal (or the open) sent
	sentAt   time.Duration // local monotonic: when it was sent
	confirmd time.Time     // the highest expiry the store confirmed
	up       []UpSpan      // the stamps its generation's renewals got back, merged (session_uptime.go)
	stored   []UpSpan      // the part of up the store is known to hold (session_uptime.go)
	// confirms are the newest confirmed opens and renewals, by reply
	// (resume.go: the expiries its owner's lease counted).
	confirms []confirmed
}

// nextExpiry is the expiry a renewal sent now asks for: the latest possible
// server time plus the TTL, and never less than the last one sent plus the
// local time elapsed since. A server clock stepped back (or samples that
// disagree within their error) must not make a renewal store an earlier
// expiry than the holder's deadline implies; the owner's deadline counts
// local time from each send, so the expiry keeps pace with it. sessions.mu
// must be held.
func (r *renewal) nextExpiry(now Interval, mono time.Duration) time.Time {
	exp := CeilMilli(now.Latest.Add(r.ttl))
	if !r.sentExp.IsZero() {
		if floor := CeilMilli(r.sentExp.Add(mono - r.sentAt)); floor.After(exp) {
			exp = floor
		}
	}
	r.sentExp, r.sentAt = exp, mono
	return exp
}

// OpenSession creates a session valid until ttl after the latest possible
// server time at sending (with an outage grace, marked as kept by a writer
// of the record of up-time: insertDoc). The caller's local deadline for it counts from
// sent, the local monotonic time at sending. On error the session must not
// be used: it may exist or not.
func (s *sessions) OpenSession(ctx context.Context, ttl time.Duration) (id string, sent time.Duration, err error) {
	if ttl <= 0 {
		return "", 0, errors.New("TTL must be positive")
	}
	id = s.newID()
	r := &renewal{ttl: ttl, mu: make(chan struct{}, 1)}
	s.mu.Lock()
	sent = s.clock.Mono()
	expires := r.nextExpiry(s.clock.ServerNow(), sent)
	r.last = sent
	s.mu.Unlock()
	if err := s.insertDoc(ctx, Session{ID: id, ExpiresAt: expires}); err != nil {
		return "", 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for other, o := range s.renewals {
		if sent-o.last > 2*o.ttl {
			delete(s.renewals, other)
		}
	}
	r.confirmd = expires
	r.noteConfirmed(s.clock.Mono(), expires)
	s.renewals[id] = r
	return id, sent, nil
}

// RenewSession raises the session's expiry to ttl after the latest
// possible server time at sending (or more: see renewal.nextExpiry).
// found is false when the session no longer exists, or was not opened by
// this engine, or went unrenewed for two TTLs. The caller counts the
// renewal from sent only if the reply came before the local deadline in
// force (a late reply may come from a renewal applied after the session
// had expired and been judged dead). Renewals of one session wait for each
// other.
//
// A renewal updates one document of the session. One whose outcome is
// unknown may still be applied at any time, also after a later renewal of
// the same document; on a store that reads a document and later writes it
// whole (FerretDB), it would then write back its lower expiry. So that
// document is never updated again: the renewal goes at once, and every
// later one after it, to the session's next generation, a new document
// inserted with the expiry (readers take the highest of a session's
// documents). An insert of unknown outcome is sent again by the next
// renewal; it lands once at most, so once one is confirmed (or answered
// ErrExists) the generation is updated like the first.
func (s *sessions) RenewSession(ctx context.Context, id string, ttl time.Duration) (found bool, sent time.Duration, err error) {
	s.mu.Lock()
	r := s.renewals[id]
	sent = s.clock.Mono()
	if r != nil {
		r.last = sent
	}
	s.mu.Unlock()
	if r == nil {
		return false, sent, nil
	}
	select {
	case r.mu <- struct{}{}:
	case <-ctx.Done():
		return true, sent, ctx.Err()
	}
	defer func() { <-r.mu }()
	s.mu.Lock()
	r.ttl = ttl
	sent = s.clock.Mono()
	expires := r.nextExpiry(s.clock.ServerNow(), sent)
	s.mu.Unlock()
	if !renewalValid(ctx) {
		return true, sent, ErrRenewalLate
	}
	found, err = s.renew(ctx, r, id, expires)
	if err == nil && found {
		s.mu.Lock()
		if expires.After(r.confirmd) {
			r.confirmd = expires
		}
		r.noteConfirmed(s.clock.Mono(), expires)
		s.mu.Unlock()
	}
	return found, sent, err
}

// renew writes one renewal to the session's current generation (see
// RenewSession); r.mu is held.
func (s *sessions) renew(ctx context.Context, r *renewal, id string, expires time.Time) (bool, error) {
	if !r.insert {
		found, err := s.renewDoc(ctx, r, id, expires)
		if s.keepsGen(err) {
			return found, err
		}
		s.nextGen(r)
	}
	err := s.insertDoc(ctx, Session{ID: id, Gen: r.gen, ExpiresAt: expires})
	switch {
	case err == nil:
		r.insert = false
		return true, nil
	case errors.Is(err, ErrExists):
		// An earlier insert of this generation landed, with an older
		// expiry; no other write to it can be in flight.
		r.insert = false
		found, err := s.renewDoc(ctx, r, id, expires)
		if err != nil {
			s.nextGen(r)
		}
		return found, err
	default:
		return false, err
	}
}

// nextGen moves r to its session's next generation, to be inserted by the
// next write, whose record of up-time starts from the last span of the
// record so far (carried: session_uptime.go); r.mu is held.
func (s *sessions) nextGen(r *renewal) {
	r.gen, r.insert = r.gen+1, true
	s.mu.Lock()
	r.up = carried(r.up)
	s.mu.Unlock()
}

// claimTerms returns what a claim made in session carries: its TTL and
// the highest expiry its renewals had confirmed (zero for a session this
// engine did not open).
func (s *sessions) claimTerms(session string) (ttl time.Duration, exp time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.renewals[session]; r != nil {
		return r.ttl, r.confirmd
	}
	return 0, time.Time{}
}

// ConfirmedExpiry returns the highest expiry of session that the store
// confirmed to this engine (its open or a renewal): the session's stored
// expiry is at least that, since a stored expiry never goes down. Zero
// for a session this engine did not open, or has forgotten (unrenewed for
// two TTLs).
func (s *sessions) ConfirmedExpiry(session string) time.Time {
	_, exp := s.claimTerms(session)
	return exp
}
