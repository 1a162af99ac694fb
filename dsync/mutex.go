package dsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/rs/xid"

	"github.com/go-dsync/dsync/internal/chain"
)

// Backoff between acquire attempts that failed with an error (not with
// contention): doubled from minBackoff up to maxBackoff, with jitter.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// A Mutex is a mutual exclusion lock shared by every process that uses the
// same key on the same backend. Its zero value is not usable: create it
// with NewMutex. A Mutex must not be copied after first use.
//
// A successful Lock, LockContext or TryLock establishes a hold: a lease the
// Mutex renews in the background until Unlock. While the hold is valid no
// other holder of the key exists anywhere, and Token returns a fencing
// token larger than that of every earlier hold of the key. A failed TryLock
// or LockContext establishes nothing.
//
// A hold can end without Unlock: when its lease cannot be confirmed before
// its local deadline (backend unreachable, renewal refused), Lost() is
// closed. After that the caller must stop relying on the lock and should
// Unlock. The Mutex stays locked locally until Unlock, as a sync.Mutex
// would.
//
// Goroutines of one process that share a *Mutex contend locally first, so
// at most one of them talks to the backend; like sync.Mutex, a locked Mutex
// is not tied to a goroutine, and any goroutine may Unlock it.
type Mutex struct {
	client *Client
	key    string // as given
	stored string // the key in the store: key, or in a namespace
	owner  string
	cfg    config

	// sem is the local lock: a token in it means some goroutine holds or
	// is acquiring the Mutex.
	sem chan struct{}

	mu   sync.Mutex
	hold *hold // the current hold; nil when not held
}

// NewMutex returns a Mutex for key on backend. Every Mutex value has its
// own owner identity: two Mutex values for the same key exclude each
// other even in one process.
func NewMutex(backend Backend, key string, opts ...Option) (*Mutex, error) {
	if backend == nil {
		return nil, errors.New("dsync: nil backend")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	stored, err := storedKey(key, cfg.namespace)
	if err != nil {
		return nil, err
	}
	client := backend.Client()
	if err := client.checkKey(stored); err != nil {
		return nil, err
	}
	if span := client.eng.Span(); cfg.ttl > span {
		return nil, fmt.Errorf("dsync: TTL %v is above the bucket span %v (a hold must end before its key's coverage can)", cfg.ttl, span)
	}
	m := &Mutex{
		client: client,
		key:    key,
		stored: stored,
		owner:  xid.New().String(),
		cfg:    cfg,
		sem:    make(chan struct{}, 1),
	}
	return m, nil
}

// reservedPrefix begins the keys of dsync's own namespaces (WithNamespace):
// plain keys may not.
const reservedPrefix = "dsync:"

// storedKey is the key a Mutex claims in its store.
func storedKey(key, namespace string) (string, error) {
	switch {
	case key == "":
		return "", errors.New("dsync: empty key")
	case namespace != "":
		return reservedPrefix + namespace + "/" + key, nil
	case strings.HasPrefix(key, reservedPrefix):
		return "", fmt.Errorf("dsync: key %q: keys beginning with %q are reserved", key, reservedPrefix)
	}
	return key, nil
}

// Key returns the lock's key.
func (m *Mutex) Key() string { return m.key }

// Owner returns the identity this Mutex acquires under: unique per Mutex
// value, and the Owner of every Claim it makes.
func (m *Mutex) Owner() string { return m.owner }

// Lock locks m, blocking until it is held, like sync.Mutex.Lock.
//
// Lock has no error to return: it retries backend errors (an unreachable
// server, timeouts) with capped, jittered backoff for as long as it takes,
// and reports each one through WithLogger and WithErrorHandler. Use
// LockContext to bound the wait or to see the errors.
func (m *Mutex) Lock() {
	// context.Background never ends, so LockContext returns only once held.
	_ = m.LockContext(context.Background())
}

// LockContext locks m, blocking until it is held or ctx ends. When ctx ends
// first it returns context.Cause(ctx) — unchanged, or wrapped together with
// the last backend error if attempts were failing — and m is not held.
//
// The claim LockContext made is withdrawn when ctx ends first, so that it
// does not keep others waiting; if the withdrawal cannot be confirmed, the
// backend keeps trying, and the claim ends with its session at the latest.
func (m *Mutex) LockContext(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if _, err := m.acquire(ctx, true); err != nil {
		<-m.sem
		return err
	}
	return nil
}

// TryLock tries to lock m and reports whether it succeeded. It makes one
// attempt and never waits on contention: not on another goroutine of this
// process holding m, not on another owner holding or waiting for the key
// (it never queues). The attempt is bounded by the TTL; a backend error
// counts as failure and is reported like Lock's.
func (m *Mutex) TryLock() bool {
	select {
	case m.sem <- struct{}{}:
	default:
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.ttl)
	defer cancel()
	ok, _ := m.acquire(ctx, false)
	if !ok {
		<-m.sem
	}
	return ok
}

// Unlock unlocks m and releases its lease so that the next holder need not
// wait for the TTL. It is a run-time error (a panic, as with sync.Mutex) if
// m is not locked. Unlock after the hold was lost does not panic.
//
// Unlock bounds the release by WithReleaseTimeout (at most 2 s by
// default); a release that fails or times out is reported through
// WithLogger and WithErrorHandler, and the lease then simply expires after
// its TTL. Use UnlockContext to choose the bound and see the outcome.
func (m *Mutex) Unlock() {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.releaseTimeout())
	defer cancel()
	if err := m.UnlockContext(ctx); err != nil && !errors.Is(err, ErrLost) {
		m.report(err)
	}
}

// UnlockContext unlocks m like Unlock and reports the outcome: an error
// wrapping ErrLost if the hold had been lost before this call (the critical
// section was not fully protected; the lease is then left to expire rather
// than released), or the backend's error if the release could not be
// confirmed (the lease then expires after its TTL). m is unlocked locally
// in every case.
func (m *Mutex) UnlockContext(ctx context.Context) error {
	m.mu.Lock()
	h := m.hold
	m.hold = nil
	m.mu.Unlock()
	if h == nil {
		panic("dsync: unlock of unlocked mutex")
	}
	defer func() { <-m.sem }()

	// The hold is ended (which looks at the deadline, and loses the hold
	// if it has passed) before its keeper stops counting it: a hold the
	// keeper no longer counts is not lost when its session is retired.
	lostErr := h.end()
	h.keeper.remove(h)
	if lostErr != nil {
		// A lost hold is left to run out instead of being released: the
		// time between the local deadline and the session's expiry in
		// the backend is the margin that lets a holder which was told
		// late stop before anyone else starts.
		return lostErr
	}
	// The release is a write of its own (not an update of anything a
	// renewal touches), so it races no renewal in flight.
	if err := m.client.end(ctx, h.claim, true); err != nil {
		return fmt.Errorf("dsync: release %q: %w", m.key, err)
	}
	return nil
}

// Lost returns a channel that is closed when the current hold ends without
// an Unlock: its lease could not be confirmed before the local deadline, or
// the backend refused to renew it. Unlock does not close it. When m is not
// held, Lost returns a closed channel: nothing is protected.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	if h == nil {
		return closedChan
	}
	h.expireIfDue() // the timer may not have run yet after a pause
	return h.lost
}

// Token returns the fencing token of the current hold, or 0 when m is not
// held. Tokens of a key strictly increase from hold to hold; pass the token
// with every write to a resource that can reject stale writers.
func (m *Mutex) Token() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return 0
	}
	return m.hold.claim.Token
}

// ValidUntil returns the local deadline of the current hold — the send
// time of its session's last confirmed open or renewal, plus the TTL,
// minus a safety margin of TTL/20 — on time.Now's scale: time.Now() plus the time
// left, as of the call. Lost() closes then unless a renewal confirms it
// first. It returns the zero Time when m is not held. Compare it with
// time.Now, not with other hosts. The deadline counts time the machine
// spends suspended (on Linux) and time.Now does not, so a value obtained
// before a suspend is late by the time suspended: call ValidUntil again
// after one, or watch Lost().
func (m *Mutex) ValidUntil() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return time.Time{}
	}
	return time.Now().Add(m.hold.validUntil().Sub(m.cfg.clock.Now()))
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// acquire claims m's key and waits for the claim to hold, retrying
// backend errors, until it holds, or — when wait is false — makes one
// attempt that never waits (TryLock). m.sem is held by the caller.
func (m *Mutex) acquire(ctx context.Context, wait bool) (bool, error) {
	backoff := minBackoff
	var lastErr error
	// backOff sleeps before the next attempt after a failed one, doubling
	// the pause each time; it reports false if ctx ended first.
	backOff := func() bool {
		ok := sleep(m.cfg.clock, jitter(backoff), ctx.Done())
		backoff = min(2*backoff, maxBackoff)
		return ok
	}
	fail := func(err error) (retry bool) {
		lastErr = err
		m.report(err)
		return wait && backOff()
	}
	resets := 0
	for {
		k, err := m.client.keeperOf(m)
		if err != nil {
			return false, err
		}
		sess, err := k.enter(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return false, m.contextErr(ctx, cmp.Or(lastErr, err))
			}
			if !fail(fmt.Errorf("dsync: acquire %q: %w", m.key, err)) {
				return false, m.failure(ctx, err, lastErr)
			}
			continue
		}
		held, err := m.claimAndAwait(ctx, k, sess, wait)
		switch {
		case held:
			return true, nil
		case errors.Is(err, ErrHeld) && !wait:
			k.leave(sess)
			return false, err
		case errors.Is(err, ErrHeld):
			// Lost every race for a place at the end of the queue, with
			// many processes claiming at once: contention, not failure.
			k.leave(sess)
			if !sleep(m.cfg.clock, jitter(minBackoff), ctx.Done()) {
				return false, m.contextErr(ctx, lastErr)
			}
		case ctx.Err() != nil:
			k.leave(sess)
			return false, m.contextErr(ctx, cmp.Or(lastErr, err))
		case chain.IsLapsed(err) && sess.ctx.Err() == nil:
			// The key's segment lapsed under the claim (see
			// internal/chain): the claim was given up; queue again.
			k.leave(sess)
		case errors.Is(err, ErrReset) && sess.ctx.Err() == nil:
			// The store lost the key's history (emptied or restored): the
			// claim is void. The session may be gone with it: renewing it
			// now retires it if so, and the next claim opens another.
			k.check(sess)
			k.leave(sess)
			if resets++; resets > 1 && !fail(fmt.Errorf("dsync: acquire %q: %w", m.key, err)) {
				return false, m.failure(ctx, err, lastErr)
			}
			m.report(fmt.Errorf("dsync: acquire %q: queueing again: %w", m.key, err))
		case sess.ctx.Err() != nil:
			// The session was retired while we waited: its claim is
			// withdrawn; queue again in a new one.
			k.leave(sess)
			if !fail(err) {
				return false, m.failure(ctx, err, lastErr)
			}
		default:
			k.leave(sess)
			if !fail(fmt.Errorf("dsync: acquire %q: %w", m.key, err)) {
				return false, m.failure(ctx, err, lastErr)
			}
		}
	}
}

// failure is what a failed attempt returns: ctx's cause if it ended,
// otherwise the backend's error.
func (m *Mutex) failure(ctx context.Context, err, lastErr error) error {
	if ctx.Err() != nil {
		return m.contextErr(ctx, lastErr)
	}
	return err
}

// claimAndAwait queues m in sess and waits until the claim holds, then
// installs the hold. Whatever stops it first (ctx, the session's
// retirement, a backend error) withdraws the claim. With wait false, the
// backend's Claim either holds at once or returns a *HeldError.
func (m *Mutex) claimAndAwait(ctx context.Context, k *keeper, sess *session, wait bool) (bool, error) {
	// Bound by the session: a claim made in a retired session must never
	// hold.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(sess.ctx, func() { cancel(context.Cause(sess.ctx)) })
	defer stop()

	cctx, ccancel := context.WithTimeout(wctx, m.cfg.ttl-m.cfg.margin())
	c, err := m.client.claim(cctx, m.stored, m.owner, sess.id, chain.ExclusiveTerms, !wait)
	ccancel()
	if err != nil && sess.ctx.Err() != nil && !errors.Is(err, ErrHeld) {
		// The session was retired meanwhile: that is why.
		return false, fmt.Errorf("dsync: acquire %q: %w (%w)", m.key, context.Cause(sess.ctx), err)
	}
	if err != nil {
		return false, err
	}
	if wait {
		for {
			c.Below, err = m.client.await(wctx, c)
			if err == nil || wctx.Err() != nil || errors.Is(err, ErrReset) || chain.IsLapsed(err) {
				break
			}
			// A backend error while waiting: the claim keeps its place
			// (a waiter that stops waiting would lose it); try again.
			m.report(fmt.Errorf("dsync: waiting for %q: %w", m.key, err))
			if !sleep(m.cfg.clock, jitter(minBackoff*10), wctx.Done()) {
				break
			}
		}
		if err == nil && wctx.Err() != nil {
			err = context.Cause(wctx)
		}
	}
	if err == nil && m.install(c, k, sess) {
		return true, nil
	}
	if err == nil {
		err = fmt.Errorf("dsync: acquire %q: %w", m.key, context.Cause(sess.ctx))
	}
	m.withdraw(c)
	return false, err
}

// withdraw gives up a claim that will not be held. If the store cannot
// confirm it, the Client sends it again in the background, and before its
// next claim; until then it waits in the queue for as long as its session
// lives.
func (m *Mutex) withdraw(c claimRef) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.releaseTimeout())
	defer cancel()
	if err := m.client.end(ctx, c, false); err != nil {
		m.report(fmt.Errorf("dsync: withdraw %q (token %d): %w", m.key, c.Token, err))
	}
}

// contextErr is what LockContext returns when ctx ends: its cause, with the
// last backend error attached when there was one (even one that only says
// the context ended: the driver's message tells why, such as no server
// answering).
func (m *Mutex) contextErr(ctx context.Context, lastErr error) error {
	cause := context.Cause(ctx)
	if lastErr == nil || lastErr == cause || lastErr.Error() == cause.Error() {
		return cause
	}
	return fmt.Errorf("%w (last backend error: %w)", cause, lastErr)
}

// install makes c the current hold, valid until its session's deadline, if
// the session is still live.
func (m *Mutex) install(c claimRef, k *keeper, sess *session) bool {
	h := &hold{m: m, claim: c, lost: make(chan struct{})}
	if !k.join(h, sess) {
		return false
	}
	m.mu.Lock()
	m.hold = h
	m.mu.Unlock()
	return true
}

func (m *Mutex) report(err error) {
	m.cfg.logger.Warn("dsync", "key", m.key, "err", err)
	if m.cfg.onError != nil {
		m.cfg.onError(err)
	}
}

// jitter returns a duration in [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
