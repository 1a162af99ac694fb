package dsyncgocron

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/go-dsync/dsync/dsync"
)

// Namespace is the dsync namespace of the jobs' locks, and the prefix of
// their slots' Once keys.
const Namespace = "gocron"

var (
	// ErrRunning is what Lock returns when another run of the job holds
	// its lock (or waits for it), in this process or another: gocron skips
	// the tick, as it should. The error also wraps the *dsync.HeldError
	// that names the holder.
	ErrRunning = errors.New("dsyncgocron: the job is running elsewhere")
	// ErrUnavailable is what Lock returns when the job's lock could not be
	// taken, or its slot claimed, because the store failed or did not
	// answer (within the Client's try timeout,
	// dsync.ClientWithTryTimeout, for the lock): gocron skips the tick, but unlike ErrRunning this is an
	// outage, worth an alert. The error also wraps the store's error;
	// when this process's lease ended during the attempt instead (the
	// store did not confirm it in time), it says so, and does not match
	// dsync.ErrLost: no lock was held.
	// It is also what Lock returns when the slot's claim may have been
	// made twice: its reply came after this replica's hold had ended
	// (wrapping dsync.ErrUnconfirmed), or it met the claim of another
	// replica whose request the store had held back until after this
	// one's read (wrapping dsync.ErrRanTwice). Each replica then skips
	// the tick: the slot is not run rather than run twice.
	ErrUnavailable = errors.New("dsyncgocron: the store failed or did not answer")
	// ErrSlotTaken is what Lock returns when the job already ran for this
	// tick's slot: gocron skips the tick.
	ErrSlotTaken = errors.New("dsyncgocron: the job already ran for this slot")
)

// unlockTimeout bounds an Unlock, which gocron calls with the job's
// context: a context cancelled at shutdown must not leave the lock to
// expire.
const unlockTimeout = 30 * time.Second

// A Locker is a gocron.Locker that runs each scheduled time of a job once
// across schedulers (see the package documentation). Create it with
// NewLocker; it is safe for concurrent use.
type Locker struct {
	client *dsync.Client
	slot   time.Duration
	now    func() time.Time
	opts   []dsync.Option

	mu    sync.Mutex
	locks map[string]*dsync.Mutex
}

var _ gocron.Locker = (*Locker)(nil)

// NewLocker returns a Locker on client whose slots are slot long: the
// interval of the jobs it locks, whose scheduled times are multiples of it
// (see the package documentation). The locks share client's lease (its
// TTL is the Client's: dsync.ClientWithTTL, as are its logger and try
// timeout). opts apply to the jobs' locks (dsync.WithProgressDeadline); a
// slot's record is forgotten
// (dsync.WithForgetAfter) ten slots after its run, and at least an hour.
func NewLocker(client *dsync.Client, slot time.Duration, opts ...dsync.Option) (*Locker, error) {
	if client == nil {
		return nil, errors.New("dsyncgocron: nil client")
	}
	if slot <= 0 {
		return nil, fmt.Errorf("dsyncgocron: slot length %v: it must be positive (the jobs' interval)", slot)
	}
	// Check the options once, here, rather than at the first tick.
	if _, err := dsync.NewMutex(client, "check", append(opts[:len(opts):len(opts)], dsync.WithNamespace(Namespace))...); err != nil {
		return nil, fmt.Errorf("dsyncgocron: %w", err)
	}
	return &Locker{client: client, slot: slot, now: time.Now, opts: opts, locks: make(map[string]*dsync.Mutex)}, nil
}

// Slot returns the slot a tick at t counts for: t rounded to the nearest
// multiple of the slot length.
func (l *Locker) Slot(t time.Time) time.Time {
	return t.Add(l.slot / 2).Truncate(l.slot)
}

// SlotKey is the dsync.Once key of job's slot at t (see Slot).
func (l *Locker) SlotKey(job string, t time.Time) string {
	return Namespace + "/" + job + "/" + l.Slot(t).UTC().Format(time.RFC3339Nano)
}

// Lock implements gocron.Locker: it takes job's lock without waiting
// (one attempt, within ctx and the lock's try timeout: 2 s by default),
// and claims the slot of this tick (now, on this machine's clock: the
// clock that scheduled it). It fails with ErrRunning or ErrSlotTaken when
// the tick is to be skipped because the job runs or ran; with
// ErrUnavailable when the store failed or did not answer; or with ctx's
// cause when ctx ended first.
func (l *Locker) Lock(ctx context.Context, job string) (gocron.Lock, error) {
	key := l.SlotKey(job, l.now())
	m, err := l.mutex(job)
	if err != nil {
		return nil, err
	}
	if err := m.TryLockContext(ctx); err != nil {
		switch {
		case errors.Is(err, dsync.ErrHeld):
			return nil, fmt.Errorf("%w: %q: %w", ErrRunning, job, err)
		case ctx.Err() != nil:
			return nil, err // context.Cause(ctx)
		case errors.Is(err, dsync.ErrLost):
			return nil, &notTakenError{job: job, err: err}
		}
		return nil, fmt.Errorf("%w: %q: %w", ErrUnavailable, job, err)
	}
	won, err := l.claim(ctx, key)
	if err == nil && !won {
		err = fmt.Errorf("%w: %q", ErrSlotTaken, key)
	}
	if err != nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		_ = m.UnlockContext(uctx)
		return nil, err
	}
	return &lock{m: m}, nil
}

// claim records key's slot as run, and reports whether this call was the
// one that recorded it.
func (l *Locker) claim(ctx context.Context, key string) (won bool, err error) {
	o, err := dsync.NewOnce(l.client, key, dsync.WithForgetAfter(max(10*l.slot, time.Hour)))
	if err != nil {
		return false, fmt.Errorf("dsyncgocron: %w", err)
	}
	err = o.Do(ctx, func(context.Context) error {
		won = true
		return nil
	})
	if err != nil {
		return failedClaim(ctx, key, err)
	}
	return won, nil
}

// skipSlot is what a claim of key's slot that failed with err gives
// (failedClaim): the slot skipped, unwon.
func skipSlot(ctx context.Context, key string, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, err // context.Cause(ctx), with the last backend error if any
	}
	// Whether the record landed is unknown, or it landed only after the
	// hold ended (dsync.ErrUnconfirmed), or another replica's claim
	// landed after this one's read (dsync.ErrRanTwice): skip the slot
	// rather than risk a second run of it.
	return false, fmt.Errorf("%w: claiming slot %q: %w", ErrUnavailable, key, err)
}

// mutex returns job's lock, one per job and Locker.
func (l *Locker) mutex(job string) (*dsync.Mutex, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m, ok := l.locks[job]; ok {
		return m, nil
	}
	m, err := dsync.NewMutex(l.client, job, append(l.opts[:len(l.opts):len(l.opts)], dsync.WithNamespace(Namespace))...)
	if err != nil {
		return nil, fmt.Errorf("dsyncgocron: %w", err)
	}
	l.locks[job] = m
	return m, nil
}

// lock is a run's hold of its job's lock.
type lock struct {
	m *dsync.Mutex
}

// Unlock implements gocron.Lock: it releases the job's lock, even if ctx
// is cancelled (within a bound of its own). It fails with an error
// wrapping dsync.ErrLost if the hold had been lost while the job ran.
func (k *lock) Unlock(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	return k.m.UnlockContext(ctx)
}

// notTakenError is Lock's ErrUnavailable when this process's lease (its
// dsync session) ended while the try was under way, as when the store
// stops answering: the store did not confirm the lease in time, so the
// job's lock was not taken. dsync words that end as a lost hold's
// ("lock lost before unlock"), and may say it twice; no lock was held,
// so the error says why once, and does not match dsync.ErrLost.
type notTakenError struct {
	job string
	err error // dsync's, which wraps dsync.ErrLost
}

func (e *notTakenError) Error() string {
	return fmt.Sprintf("%v: %q: the lock was not taken: this process's lease was not confirmed in time: %s", ErrUnavailable, e.job, leaseEnd(e.err))
}

func (e *notTakenError) Unwrap() error { return ErrUnavailable }

// leaseEnd is why a lease ended, from dsync's error: what follows its
// last "lock lost before unlock: ", without the parentheses that closed
// before it.
func leaseEnd(err error) string {
	why := err.Error()
	lost := dsync.ErrLost.Error() + ": "
	if i := strings.LastIndex(why, lost); i >= 0 {
		why = why[i+len(lost):]
	}
	for strings.HasSuffix(why, ")") && strings.Count(why, ")") > strings.Count(why, "(") {
		why = strings.TrimSuffix(why, ")")
	}
	return why
}
