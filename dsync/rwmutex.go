package dsync

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/event"
)

// An RWMutex is a reader/writer lock shared by processes through a store.
// Every process that uses the same key on the same store shares it. It has
// the shape of sync.RWMutex: any number of readers or one writer hold it at
// a time. Its zero value is not usable: create it with NewRWMutex; every
// method of a zero RWMutex panics at once. An RWMutex must not be copied
// after first use.
//
// Readers and writers queue together, first come first served: a reader
// holds once every writer queued before it has ended, a writer once every
// claim queued before it has ended. So a waiting writer blocks the readers
// that come after it and is never starved, as sync.RWMutex promises within
// a process. As with sync.RWMutex, a goroutine must not read-lock again
// while it holds a read lock: a writer queued in between would deadlock
// it.
//
// Each write hold is a claim of its own with a fencing token (Token), and
// shares the process's lease like a Mutex's. A writer's token is larger
// than that of every hold that began before it, and smaller than that of
// every hold that begins after it. Readers' tokens are ordered against
// every writer's, but not among themselves (readers do not exclude each
// other), and no two read holds share one, unless the read linger is on
// (below). A resource fenced against writers keeps the highest token a
// writer used and rejects lower ones.
//
// By default RUnlock releases its read claim, as sync.RWMutex's RUnlock
// gives up the read lock: once every read ended, the store shows no
// reader and a TryLock anywhere may hold. WithReadLinger turns on a read
// linger, for readers that churn RLock and RUnlock in one process: after
// the last RUnlock of an RWMutex value, it keeps its read claim until the
// linger (at most the renew interval) has passed since the claim's first
// RUnlock, and an RLock or TryRLock in that time holds it again with no
// request to the store, with its token. It
// lingers only where the process hears at once that a writer waits,
// through direct hints (ClientWithHints) or the store's live wake-up
// stream; elsewhere RUnlock releases as without it. The claim is an
// ordinary read hold of the lease throughout, so a writer never holds
// beside it; it ends as soon as a writer queues behind it (at the RUnlock
// of the RLock holding it, if one does: RLocks from then on claim anew
// and queue behind the writer), when the linger ends, when this value
// locks for writing, and at Close; it is never taken again once its
// lease was lost. Turned on, it changes these promises:
//
//   - another value's or process's TryLock, which never queues and so
//     never announces, fails for up to the linger after every read ended,
//     and fails every time while the value reads more often than that;
//   - a writer whose process takes no hints waits up to the linger behind
//     a reader whose process hears only hints (not the store's stream);
//   - the store (and dsync status) shows a reader while none holds;
//   - the value's read holds within one linger (from the first RUnlock of
//     their claim, while no writer queued) share a token;
//   - until the process hears of a writer (an event's trip), an RLock may
//     still take the claim again, ahead of a writer that queued in the
//     meantime.
//
// Lost closes when any hold of the RWMutex is lost; Unlock and RUnlock
// report nothing, UnlockContext and RUnlockContext return ErrLost for a
// hold that was lost.
//
// Within one process, writers on one *RWMutex contend locally first, as
// on a Mutex; an RLock is a claim of its own unless it takes the
// lingering claim (with the linger on; one RLock at a time holds that).
// RWMutex keys live in a namespace of their own ("dsync:rw/KEY"): an RWMutex and a Mutex of
// the same key do not exclude each other.
type RWMutex struct {
	core

	// sem is the local writers' lock: a token in it means some goroutine
	// holds or is acquiring the write lock.
	sem chan struct{}

	mu    sync.Mutex
	write *hold // the write hold; nil when not write-locked
	// lingering: the read claim kept after the last RUnlock
	// (rwlinger.go); nil if none.
	lingering *lingerState

	holds holdSet // every hold, read and write
}

// NewRWMutex returns an RWMutex for key on c. Every RWMutex value
// has its own owner identity: two values for the same key exclude each
// other's writers even in one process.
func NewRWMutex(c *Client, key string, opts ...Option) (*RWMutex, error) {
	p, err := newCore(c, key, rwNamespace, primRWMutex, opts)
	if err != nil {
		return nil, err
	}
	rw := &RWMutex{core: p, sem: make(chan struct{}, 1)}
	rw.lostHook = rw.holds.onLost
	return rw, nil
}

// mustBeMade panics if rw is a zero RWMutex (zero.go).
func (rw *RWMutex) mustBeMade() {
	if rw == nil || rw.client == nil {
		zeroPanic("RWMutex")
	}
}

// Key returns the lock's key, as given to NewRWMutex.
func (rw *RWMutex) Key() string {
	rw.mustBeMade()
	return rw.key
}

// Lock locks rw for writing, like sync.RWMutex.Lock. It blocks until no
// other hold of the key is valid. It retries store errors for as long as it
// takes (see Mutex.Lock); use LockContext to bound the wait. It never
// returns without the lock: as Mutex.Lock does, it panics with an error
// wrapping ErrClosed when rw's Client is closed, or ErrSpan.
func (rw *RWMutex) Lock() {
	rw.mustBeMade()
	if err := rw.LockContext(context.Background()); err != nil {
		panic(err)
	}
}

// LockContext locks rw for writing, blocking until held or ctx ends. If ctx
// ends first, it returns context.Cause(ctx) (see Mutex.LockContext).
func (rw *RWMutex) LockContext(ctx context.Context) error {
	rw.mustBeMade()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case rw.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	rw.dropLinger(ctx)
	h, err := rw.acquire(ctx, exclusive(), true, "")
	if err != nil {
		<-rw.sem
		return err
	}
	rw.installWrite(h)
	return nil
}

// TryLock tries to lock rw for writing and reports whether it succeeded.
// It never waits: not for another goroutine of this process, not for any
// other hold or claim of the key (it never queues). Its one attempt is
// bounded by the try timeout, as Mutex.TryLock's is; TryLockContext says
// why it failed.
func (rw *RWMutex) TryLock() bool {
	rw.mustBeMade()
	return rw.TryLockContext(context.Background()) == nil
}

// TryLockContext makes TryLock's one attempt, bounded by ctx as well. It
// says why it failed, as Mutex.TryLockContext does: an error wrapping
// ErrHeld, context.Cause(ctx) unchanged, or the store's error.
func (rw *RWMutex) TryLockContext(ctx context.Context) error {
	rw.mustBeMade()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case rw.sem <- struct{}{}:
	default:
		return &HeldError{Key: rw.key, Owner: rw.owner, Token: rw.writeToken()}
	}
	rw.dropLinger(ctx)
	h, err := rw.try(ctx, exclusive(), "")
	if err != nil {
		<-rw.sem
		return err
	}
	rw.installWrite(h)
	return nil
}

// writeToken is the token of rw's write hold, 0 if none.
func (rw *RWMutex) writeToken() uint64 {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.write == nil {
		return 0
	}
	return rw.write.claim.Epoch
}

func (rw *RWMutex) installWrite(h *hold) {
	rw.mu.Lock()
	rw.write = h
	rw.mu.Unlock()
	rw.holds.add(h)
}

// Unlock unlocks rw for writing and releases the write hold (see
// Mutex.Unlock). It is a run-time error if rw is not locked for writing.
func (rw *RWMutex) Unlock() {
	rw.mustBeMade()
	ctx, cancel := context.WithTimeout(context.Background(), rw.cfg.releaseTimeout())
	defer cancel()
	if err := rw.UnlockContext(ctx); err != nil && !errors.Is(err, ErrLost) {
		rw.report(err)
	}
}

// UnlockContext unlocks rw for writing like Unlock and reports the
// outcome, as Mutex.UnlockContext does.
func (rw *RWMutex) UnlockContext(ctx context.Context) error {
	rw.mustBeMade()
	rw.mu.Lock()
	h := rw.write
	rw.write = nil
	rw.mu.Unlock()
	if h == nil {
		panic("dsync: Unlock of unlocked RWMutex")
	}
	defer func() { <-rw.sem }()
	rw.holds.remove(h)
	return rw.release(ctx, h)
}

// RLock locks rw for reading, like sync.RWMutex.RLock. It blocks until
// every writer queued before it has ended. It retries store errors for as
// long as it takes; use RLockContext to bound the wait. It never returns
// without the lock: as Mutex.Lock does, it panics with an error wrapping
// ErrClosed when rw's Client is closed, or ErrSpan.
func (rw *RWMutex) RLock() {
	rw.mustBeMade()
	if err := rw.RLockContext(context.Background()); err != nil {
		panic(err)
	}
}

// RLockContext locks rw for reading, blocking until held or ctx ends; it
// then returns context.Cause(ctx).
func (rw *RWMutex) RLockContext(ctx context.Context) error {
	rw.mustBeMade()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if h := rw.retake(); h != nil {
		rw.retaken(h)
		return nil
	}
	h, err := rw.acquire(ctx, shared(), true, "")
	if err != nil {
		return err
	}
	rw.holds.add(h)
	return nil
}

// retaken counts h, the lingering claim an RLock took again with no
// request, as a read hold, and tells the observer so.
func (rw *RWMutex) retaken(h *hold) {
	rw.progress.Watch(h)
	rw.holds.add(h)
	a := event.Acquisition{Key: rw.key, Kind: event.KindRead, Token: h.claim.Epoch}
	rw.client.observe(func(o *event.Observer) {
		if o.Acquired != nil {
			o.Acquired(a)
		}
	})
}

// TryRLock tries to lock rw for reading and reports whether it succeeded.
// It never waits: it fails while a writer holds or waits for the key. Its
// one attempt is bounded by the try timeout, as Mutex.TryLock's is;
// TryRLockContext says why it failed.
func (rw *RWMutex) TryRLock() bool {
	rw.mustBeMade()
	return rw.TryRLockContext(context.Background()) == nil
}

// TryRLockContext makes TryRLock's one attempt, bounded by ctx as well. It
// says why it failed, as Mutex.TryLockContext does: an error wrapping
// ErrHeld (a writer holds or waits), context.Cause(ctx) unchanged, or the
// store's error.
func (rw *RWMutex) TryRLockContext(ctx context.Context) error {
	rw.mustBeMade()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if h := rw.retake(); h != nil {
		rw.retaken(h)
		return nil
	}
	h, err := rw.try(ctx, shared(), "")
	if err != nil {
		return err
	}
	rw.holds.add(h)
	return nil
}

// RUnlock undoes a single RLock call, releasing a read hold. The hold
// released is the one with the lowest token: the oldest. It is a run-time
// error if rw is not locked for reading.
func (rw *RWMutex) RUnlock() {
	rw.mustBeMade()
	ctx, cancel := context.WithTimeout(context.Background(), rw.cfg.releaseTimeout())
	defer cancel()
	if err := rw.RUnlockContext(ctx); err != nil && !errors.Is(err, ErrLost) {
		rw.report(err)
	}
}

// RUnlockContext undoes a single RLock call like RUnlock and reports the
// outcome. It returns an error wrapping ErrLost if that read hold had been
// lost. It returns the store's error if its release could not be confirmed.
func (rw *RWMutex) RUnlockContext(ctx context.Context) error {
	rw.mustBeMade()
	last := false
	taken := rw.holds.take(func(holds []*hold) []int {
		for i, h := range holds {
			if isShared(h.claim.Terms) {
				last = !slices.ContainsFunc(holds[i+1:], func(h *hold) bool { return isShared(h.claim.Terms) })
				return []int{i}
			}
		}
		return nil
	})
	if taken == nil {
		panic("dsync: RUnlock of unlocked RWMutex")
	}
	h := taken[0]
	if last && rw.linger(h) {
		// The claim lingers (rwlinger.go): the hold ended here all the
		// same.
		held := h.heldFor()
		rw.client.observe(func(o *event.Observer) {
			if o.Released != nil {
				o.Released(held)
			}
		})
		return nil
	}
	rw.forget(h)
	return rw.release(ctx, h)
}

// RLocker returns a sync.Locker whose Lock and Unlock are rw's RLock and
// RUnlock. So its Lock panics where RLock does.
func (rw *RWMutex) RLocker() sync.Locker {
	rw.mustBeMade()
	return rlocker{rw}
}

type rlocker struct{ rw *RWMutex }

func (r rlocker) Lock()   { r.rw.RLock() }
func (r rlocker) Unlock() { r.rw.RUnlock() }

// Lost returns a channel closed when any current hold of rw ends without an
// unlock. Read and write holds count alike (see Mutex.Lost). When rw holds
// nothing, Lost returns a closed channel: nothing is protected.
func (rw *RWMutex) Lost() <-chan struct{} {
	rw.mustBeMade()
	return rw.holds.lostChan()
}

// Token returns the fencing token of the write hold, else of the newest
// read hold. It returns 0 when rw holds nothing.
func (rw *RWMutex) Token() uint64 {
	rw.mustBeMade()
	rw.mu.Lock()
	w := rw.write
	rw.mu.Unlock()
	if w != nil {
		return w.claim.Epoch
	}
	if h, ok := rw.holds.newest(); ok {
		return h.claim.Epoch
	}
	return 0
}

// ValidUntil returns the earliest local deadline of rw's holds, on
// time.Now's scale. See Mutex.ValidUntil. It returns the zero Time when rw
// holds nothing.
func (rw *RWMutex) ValidUntil() time.Time {
	rw.mustBeMade()
	return rw.holds.validUntil(&rw.core)
}
