package dsync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/xid"
)

// Backoff between acquire attempts that failed with an error (not with
// contention): doubled from minBackoff up to maxBackoff, with jitter.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = 2 * time.Second
	// minRetryAfter keeps a backend's "retry now" hint from turning the
	// wait for a held lock into a busy loop.
	minRetryAfter = time.Millisecond
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
	backend Backend
	key     string
	owner   string
	cfg     config
	// keeperID selects the keeper that renews this Mutex's holds.
	keeperID keeperID

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
	if key == "" {
		return nil, errors.New("dsync: empty key")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	m := &Mutex{
		backend: backend,
		key:     key,
		owner:   xid.New().String(),
		cfg:     cfg,
		sem:     make(chan struct{}, 1),
	}
	m.keeperID = keeperIDOf(m)
	return m, nil
}

// Key returns the lock's key.
func (m *Mutex) Key() string { return m.key }

// Owner returns the identity this Mutex acquires under: unique per Mutex
// value, and the Owner of every Lease it holds.
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
// An attempt cut short by ctx may have reached the backend; such an epoch
// is never counted as held, expires after the TTL, and is released by this
// Mutex's next acquisition.
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
// process holding m, not on another owner holding the key. The attempt
// itself is one backend call, bounded by the TTL; a backend error counts
// as failure and is reported like Lock's.
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

	if lostErr := h.end(); lostErr != nil {
		// A lost lease is left to run out instead of being released: the
		// time between the local deadline and the backend's expiry is
		// the margin that lets a holder which was told late stop before
		// anyone else starts. Nothing is written, so there is no renewal
		// in flight to wait for.
		h.keeper.remove(h)
		return lostErr
	}
	// No renewal of this lease is in flight once awaitRenewal returns true, so
	// the release below is the only write to its epoch that this process
	// has pending (a store that rewrites whole documents, as FerretDB does,
	// could lose one of two concurrent updates). A renewal that failed may
	// still land late; the backend guards against that (see Backend). If
	// ctx ends first, the server is too slow to answer a renewal: the
	// release is not sent, and the lease expires after its TTL.
	h.keeper.remove(h)
	if !h.keeper.awaitRenewal(ctx.Done()) {
		return fmt.Errorf("dsync: release %q: a renewal is still in flight, the lease will expire: %w", m.key, context.Cause(ctx))
	}
	if err := m.backend.Release(ctx, h.lease); err != nil {
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
	return m.hold.lease.Token
}

// ValidUntil returns the local deadline of the current hold — the send
// time of its last confirmed acquire or renewal, plus the TTL, minus a
// safety margin of TTL/20 — on time.Now's scale: time.Now() plus the time
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

// acquire makes attempts until one succeeds, or — when wait is false —
// until the first one fails. m.sem is held by the caller.
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
	for {
		// A reply after the deadline cannot count (install), so no attempt
		// waits longer for one: a dead server shows as an error per TTL
		// instead of one per driver timeout (server selection: 30 s).
		actx, cancel := context.WithTimeout(ctx, m.cfg.ttl-m.cfg.margin())
		sent := m.cfg.clock.Now()
		lease, err := m.backend.Acquire(actx, m.key, m.owner, m.cfg.ttl)
		cancel()
		if err == nil {
			if m.install(lease, sent) {
				return true, nil
			}
			// Held on the backend, but not provably valid any more: give
			// the epoch back rather than leave it blocking others, even if
			// ctx has ended meanwhile.
			err = fmt.Errorf("dsync: acquire %q: %w", m.key, ErrLateReply)
			m.report(err)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.ttl)
			if rerr := m.backend.Release(rctx, lease); rerr != nil {
				m.report(fmt.Errorf("dsync: release %q after a late reply: %w", m.key, rerr))
			}
			cancel()
			if ctx.Err() != nil {
				return false, m.contextErr(ctx, err)
			}
			if !wait {
				return false, err
			}
			// The backend is slower than the TTL allows: back off as for
			// errors, rather than hammer it with attempts that cannot count.
			lastErr = err
			if !backOff() {
				return false, m.contextErr(ctx, lastErr)
			}
			continue
		}

		var held *HeldError
		if errors.As(err, &held) {
			if !wait {
				return false, err
			}
			backoff = minBackoff
			if !m.waitFree(ctx, held) {
				return false, m.contextErr(ctx, lastErr)
			}
			continue
		}
		if ctx.Err() != nil {
			return false, m.contextErr(ctx, err)
		}
		lastErr = err
		m.report(fmt.Errorf("dsync: acquire %q: %w", m.key, err))
		if !wait {
			return false, err
		}
		if !backOff() {
			return false, m.contextErr(ctx, lastErr)
		}
	}
}

// waitFree waits until the key held by another owner may be free, and
// reports false if ctx ended first.
func (m *Mutex) waitFree(ctx context.Context, held *HeldError) bool {
	if w, ok := m.backend.(Waiter); ok {
		return w.WaitFree(ctx, held) == nil
	}
	return sleep(m.cfg.clock, max(held.RetryAfter, minRetryAfter), ctx.Done())
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

// install makes lease the current hold if its reply came in time: a hold
// is valid until the acquire's send time + TTL − margin (see the package
// documentation).
func (m *Mutex) install(lease Lease, sent time.Time) bool {
	h := &hold{m: m, lease: lease, lost: make(chan struct{})}
	join(h, sent)
	if !h.start(sent) {
		h.keeper.remove(h)
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
