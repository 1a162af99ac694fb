package dsync

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A Mutex is a mutual exclusion lock shared by processes through a store.
// Every process that uses the same key on the same store shares it. Its
// zero value is not usable: create it with NewMutex; every method of a zero
// Mutex panics at once. A Mutex must not be copied after first use.
//
// A successful Lock, LockContext, TryLock or TryLockContext establishes a
// hold: a lease the Mutex renews in the background until Unlock. While
// the hold is valid no other holder of the key exists anywhere, and Token
// returns a fencing token larger than that of every earlier hold of the
// key. A failed TryLock, TryLockContext or LockContext establishes
// nothing.
//
// A hold can end without Unlock: when its lease cannot be confirmed before
// its local deadline (store unreachable, renewal refused), or, with a
// progress deadline (WithProgressDeadline), when its work reported no
// progress within it, Lost() is closed (Err says why). After that the caller must stop relying on the lock and should
// Unlock. The Mutex stays locked locally until Unlock, as a sync.Mutex
// would.
//
// Goroutines of one process that share a *Mutex contend locally first, so
// at most one of them talks to the store; like sync.Mutex, a locked Mutex
// is not tied to a goroutine, and any goroutine may Unlock it.
type Mutex struct {
	core

	// sem is the local lock: a token in it means some goroutine holds or
	// is acquiring the Mutex.
	sem chan struct{}

	mu   sync.Mutex
	hold *hold // the current hold; nil when not held
	last *hold // the last hold installed, current or not (Err)
}

// NewMutex returns a Mutex for key on c. Every Mutex value has its
// own owner identity: two Mutex values for the same key exclude each
// other even in one process.
func NewMutex(c *Client, key string, opts ...Option) (*Mutex, error) {
	p, err := newCore(c, key, "", primMutex, opts)
	if err != nil {
		return nil, err
	}
	p.retakes = true
	return &Mutex{core: p, sem: make(chan struct{}, 1)}, nil
}

// mustBeMade panics if m is a zero Mutex (zero.go).
func (m *Mutex) mustBeMade() {
	if m == nil || m.client == nil {
		zeroPanic("Mutex")
	}
}

// Key returns the lock's key.
func (m *Mutex) Key() string {
	m.mustBeMade()
	return m.key
}

// Lock locks m, blocking until it is held, like sync.Mutex.Lock.
//
// Lock has no error to return: it retries store errors (an unreachable
// server, timeouts) with capped, jittered backoff for as long as it takes,
// and reports each one to the Client's logger and error handler
// (ClientWithLogger, ClientWithErrorHandler). Use LockContext to bound the
// wait or to see the errors.
//
// Lock never returns without the lock. An error that retrying cannot mend
// is a run-time error, as misuse of a sync.Mutex is: Lock panics with the
// error LockContext returns, which wraps ErrClosed when m's Client (or
// backend) is closed, before or during the wait, and ErrSpan for a bucket
// span other than the store's (a configuration error). After a hold lost
// to a suspension (see LockContext) that ended, Lock locks m anew.
func (m *Mutex) Lock() {
	m.mustBeMade()
	// context.Background never ends, so lock returns only once held, or
	// on an error no retry mends.
	if err := m.lock(context.Background(), true); err != nil {
		panic(err)
	}
}

// LockContext locks m, blocking until it is held or ctx ends. When ctx ends
// first it returns context.Cause(ctx), and m is not held. The cause comes
// back unchanged (==) unless store calls were failing: then it is wrapped
// together with the last store error. A call that was in flight when ctx
// ended, and failed because it did, is no failure; only if ctx's deadline
// passed before the claim was waiting in the key's queue is what the
// store said of that call attached (such as that no server could be
// reached).
//
// The claim LockContext made is withdrawn when ctx ends first, so that it
// does not keep others waiting, even one whose insert had no reply when
// ctx ended (it may still land): LockContext waits for the withdrawal at
// most the release timeout (ClientWithReleaseTimeout). If the withdrawal cannot
// be confirmed in it, the Client keeps sending it in the background, and
// the claim ends with its session at the latest.
//
// Called while m is locked, LockContext waits for the Unlock, as
// sync.Mutex.Lock does, even after m's hold was lost. With an outage
// grace (ClientWithOutageGrace), when m's hold was lost to a suspension
// (ErrSuspended) and m is not unlocked, it waits (bounded by ctx) for the
// verdict on the outage instead: if the hold survived, it holds again,
// with the same Token and a fresh Lost() (within a TTL of the verdict:
// then the claim is released); if not, it returns an error wrapping
// ErrLost that says so, and m is unlocked.
//
// A Mutex belongs to no goroutine: a goroutine that calls LockContext
// after another's hold was lost to a suspension, before that one's
// Unlock, takes the hold back with the same token, while the other's
// work, told to stop by Lost(), may still write with it (without a grace
// it would wait for the Unlock, and hold a larger token that fences those
// writes). Goroutines that share a Mutex must Unlock a lost hold before
// another locks, or run without a grace.
func (m *Mutex) LockContext(ctx context.Context) error {
	m.mustBeMade()
	return m.lock(ctx, false)
}

// lock is LockContext; anew: after a suspended hold that ended, lock
// anew rather than return the error (Lock).
func (m *Mutex) lock(ctx context.Context, anew bool) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if h := m.suspendedHold(); h != nil {
		if done, err := m.retake(ctx, h); done && (err == nil || !locksAnew(anew) || ctx.Err() != nil) {
			return err
		}
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	h, err := m.acquire(ctx, exclusive(), true, "")
	if err != nil {
		<-m.sem
		return err
	}
	m.install(h)
	return nil
}

// TryLock tries to lock m and reports whether it succeeded. It makes one
// attempt and never waits on contention: not on another goroutine of this
// process holding m, not on another owner holding or waiting for the key
// (it never queues). The attempt is bounded by the try timeout
// (ClientWithTryTimeout: 2 s by default, or the TTL if shorter) whatever the
// store does: a store that does not answer makes TryLock return false
// when the bound passes (drivers return when their context ends). A
// store error counts as failure and is reported like Lock's; use
// TryLockContext to learn why it failed.
func (m *Mutex) TryLock() bool {
	m.mustBeMade()
	return m.TryLockContext(context.Background()) == nil
}

// TryLockContext makes TryLock's one attempt, bounded by ctx and the try
// timeout. It says why it failed:
//
//   - an error wrapping ErrHeld (a *HeldError, naming the holder when known)
//     when the lock is held or waited for, here or elsewhere;
//   - context.Cause(ctx), unchanged, when ctx ended first;
//   - otherwise the store's error: the store could not be reached, or did
//     not answer within the try timeout.
//
// A claim the attempt inserted and could not see confirmed in time is
// never trusted: it is withdrawn, in the background if the store does
// not answer, so that it keeps no one waiting once the withdrawal lands.
func (m *Mutex) TryLockContext(ctx context.Context) error {
	m.mustBeMade()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case m.sem <- struct{}{}:
	default:
		return m.heldHere()
	}
	h, err := m.try(ctx, exclusive(), "")
	if err != nil {
		<-m.sem
		return err
	}
	m.install(h)
	return nil
}

// heldHere is what a try meets when another goroutine of this process
// holds m or is acquiring it.
func (m *Mutex) heldHere() error {
	return &HeldError{Key: m.key, Owner: m.owner, Token: m.Token()}
}

// Unlock unlocks m and releases its lease. The next holder then need not
// wait for the TTL. It is a run-time error (a panic, as with sync.Mutex) if
// m is not locked. Unlock after the hold was lost does not panic.
//
// Unlock bounds the release by ClientWithReleaseTimeout (at most 2 s by
// default); a release that fails or times out is reported to the Client's
// logger and error handler, and the lease then simply expires after its
// TTL. Use UnlockContext to choose the bound and see the outcome.
func (m *Mutex) Unlock() {
	m.mustBeMade()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.releaseTimeout())
	defer cancel()
	if err := m.UnlockContext(ctx); err != nil && !errors.Is(err, ErrLost) {
		m.report(err)
	}
}

// UnlockContext unlocks m like Unlock and reports the outcome. It returns
// an error wrapping ErrLost if the hold had been lost before this call: the
// critical section was not fully protected. This call then sends nothing:
// the lease is left to expire, or a stall released the claim. A hold lost
// to a suspension (ErrSuspended) is the exception: its claim is released
// once the store's verdict on the outage kept it (at once if it came
// already), and marked dead if not. It returns
// the store's error if the release could not be confirmed. The Client then
// sends it again in the background until it lands or the Client is closed;
// the lease expires after its TTL at the latest once the Client holds
// nothing. m is unlocked locally in every case.
func (m *Mutex) UnlockContext(ctx context.Context) error {
	m.mustBeMade()
	m.mu.Lock()
	h := m.hold
	m.hold = nil
	m.mu.Unlock()
	if h == nil {
		panic("dsync: unlock of unlocked mutex")
	}
	defer func() { <-m.sem }()
	return m.release(ctx, h)
}

// Lost returns a channel that is closed when the current hold ends without
// an Unlock. That happens when its lease could not be confirmed before the
// local deadline, when the store refused to renew it, or when its progress
// deadline passed (WithProgressDeadline). Unlock does not close it. When m
// is not held, Lost returns a closed channel: nothing is protected. A hold
// lost to an outage may be taken back, with a new Lost(): see LockContext,
// and its warning for a Mutex shared by goroutines.
func (m *Mutex) Lost() <-chan struct{} {
	m.mustBeMade()
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
	m.mustBeMade()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return 0
	}
	return m.hold.claim.Epoch
}

// ValidUntil returns the local deadline of the current hold, on time.Now's
// scale. The deadline is the send time of its session's last confirmed open
// or renewal, plus the TTL, minus a safety margin of TTL/20. With a
// progress deadline (WithProgressDeadline), it is the last report of
// progress plus that deadline, if that comes first. On time.Now's scale
// means time.Now() plus the time left, as of the call. Lost() closes then
// unless a renewal (a report) moves it first. Once the hold is lost (Lost()
// is closed: its lease ran out or was revoked, or it stalled), ValidUntil
// returns when it was lost, or the deadline if that came first: never a
// time in the future, though the process's session may go on being renewed.
// It returns the zero Time when m is not held. Compare it with time.Now,
// not with other hosts. The deadline counts time the machine spends
// suspended (on Linux) and time.Now does not, so a value obtained before a
// suspend is late by the time suspended: call ValidUntil again after one,
// or watch Lost().
func (m *Mutex) ValidUntil() time.Time {
	m.mustBeMade()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return time.Time{}
	}
	return m.validUntil(m.hold)
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// install makes h the current hold.
func (m *Mutex) install(h *hold) {
	m.mu.Lock()
	m.hold, m.last = h, h
	m.mu.Unlock()
}

// suspendedHold returns m's hold if it was lost to a suspension of its
// session (ErrSuspended) and m is not unlocked; nil otherwise.
func (m *Mutex) suspendedHold() *hold {
	m.mu.Lock()
	h := m.hold
	m.mu.Unlock()
	if h == nil || m.client.cfg.lease.Grace == 0 {
		return nil // without a grace, as ever
	}
	if h.expireIfDue(); !h.suspended() { // the timer may not have run yet after a pause
		return nil
	}
	return h
}
