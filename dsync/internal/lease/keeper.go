package lease

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// A Keeper owns the session that every primitive of a Client uses: one
// lease for all their holds and waiting claims, renewed by one call per
// interval however many there are. Its goroutine runs while the session
// has holds or waiters, and exits when it has none; the session itself is
// kept for the next Lock while its deadline has not passed. Each Client
// has one, and Close ends it.
type Keeper[H Hold] struct {
	env Env[H]
	p   Params
	// origin is the reading of p.Clock that lease times count from.
	origin time.Time

	mu      sync.Mutex
	sess    *Session[H]   // the current session; nil when none or retired
	opening chan struct{} // closed when an Open under way finishes
	waiters int           // claims waiting (or being made) in sess
	holds   map[H]*Session[H]
	// kept are the holds in holds whose claims a resume kept (they stay
	// lost), until a hold of the claim takes each over (Retake), or its
	// owner lets it go (Remove, LetGo): retake.go.
	kept map[H]bool
	// letGo stops, by resume, the timers that let the kept holds go a
	// TTL after it (retake.go); Close stops them. Guarded by mu.
	letGo   map[*[]H]func() bool
	running bool          // the renewal goroutine is running
	closed  bool          // the Client was closed
	wake    chan struct{} // tells the goroutine that a hold or waiter left
	// stamps are the Stamp calls waiting for a renewal sent after them
	// (stamp.go); the loop sends one at once while any wait.
	stamps []chan bool
	// judgedOver, set only by tests (SetJudgedOver), runs right after a
	// session was judged over by its deadline timer or by a renewal reply
	// that came too late, once k.mu is released and before the loss is
	// reported: where a late Unlock runs when a paused process resumes and
	// every timer fires at once. Guarded by mu.
	judgedOver func()
}

// A Session is the lease a Keeper renews: its local deadline and renewal
// schedule follow queue.Lease. When the deadline passes, or the store
// says the session is gone, the session is retired for good: its holds
// are lost, its waiting claims are withdrawn, and the next Enter opens a
// new session.
type Session[H Hold] struct {
	id    string
	lease *queue.Lease // guarded by Keeper.mu
	// retired: the session is over, set in the same locked step that
	// judged it over (retireLocked): its lease is retired, its holds are
	// lost, its waiters' ctx is cancelled. Guarded by Keeper.mu.
	retired bool
	// why the session was retired; set with retired. Guarded by Keeper.mu.
	why error
	// ctx is cancelled, with the reason, when the session is retired.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// stopTimer stops the deadline timer; armed says whether one is set.
	// An idle session (no holds, no waiters) has none: Enter checks its
	// deadline before using it. Both guarded by Keeper.mu.
	stopTimer func() bool
	armed     bool
	// refreshing: a refresh of the segments of its keys is under way
	// (refreshAsync). Guarded by Keeper.mu.
	refreshing bool
	// confirmed is when the last renewal confirmed (or the open) was sent,
	// on the Keeper's clock (health.go). Guarded by Keeper.mu.
	confirmed time.Time
	// opened is when the open was sent, on the Keeper's clock; set once.
	opened time.Time
	// revokeChecked is when the last read of the session's revocation
	// was started (or the open sent), on the Keeper's clock; revokeReading:
	// one is under way (revoke.go). Both guarded by Keeper.mu.
	revokeChecked time.Time
	revokeReading bool
	// renewing is when the renewal under way was sent (zero if none);
	// renewErr, the failure of the last renewal that failed since the
	// last one confirmed (nil if none); expired: the session was retired
	// because its deadline passed (renew.go says what these report).
	// lost are the holds it lost. All guarded by Keeper.mu.
	renewing time.Time
	renewErr error
	expired  bool
	lost     []H
	// sus is the session's suspension while it is suspended (nil
	// otherwise: suspend.go). Guarded by Keeper.mu.
	sus *suspension[H]
}

// ID is the session's id in the store.
func (s *Session[H]) ID() string { return s.id }

// Context is cancelled, with the reason, when the session is retired.
func (s *Session[H]) Context() context.Context { return s.ctx }

// New returns the Keeper of a lease with parameters p, kept through env.
func New[H Hold](p Params, env Env[H]) *Keeper[H] {
	return &Keeper[H]{env: env, p: p, origin: p.Clock.Now(), holds: make(map[H]*Session[H]), kept: make(map[H]bool), wake: make(chan struct{}, 1)}
}

// SetJudgedOver makes f run each time a session is judged over by its
// deadline timer or by a renewal reply that came too late, right after
// the Keeper's lock is released, in the goroutine that judged it (for
// tests; nil: nothing).
func (k *Keeper[H]) SetJudgedOver(f func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.judgedOver = f
}

// mono is t on the scale of lease times.
func (k *Keeper[H]) mono(t time.Time) time.Duration { return t.Sub(k.origin) }

// Deadline is s's local deadline on the clock's scale.
func (k *Keeper[H]) Deadline(s *Session[H]) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.deadlineLocked(s)
}

// deadlineLocked is s's local deadline on the clock's scale; k.mu must be
// held.
func (k *Keeper[H]) deadlineLocked(s *Session[H]) time.Time {
	return k.origin.Add(s.lease.Deadline())
}

// armLocked sets s's deadline timer; k.mu must be held.
func (k *Keeper[H]) armLocked(s *Session[H]) {
	if s.armed {
		s.stopTimer()
	}
	s.stopTimer = k.p.Clock.AfterFunc(k.timerDelay(s), func() { k.ExpireIfDue(s) })
	s.armed = true
}

// disarmLocked stops s's deadline timer; k.mu must be held.
func (k *Keeper[H]) disarmLocked(s *Session[H]) {
	if s.armed {
		s.stopTimer()
		s.armed = false
	}
}

// Close retires the Keeper's session for good (its holds are lost, its
// waiters withdraw) with reason, and refuses new claims.
func (k *Keeper[H]) Close(reason error) {
	k.mu.Lock()
	k.closed = true
	s := k.sess
	letGo := k.letGo
	k.letGo = nil
	k.mu.Unlock()
	for _, stop := range letGo {
		stop()
	}
	if s != nil {
		k.Retire(s, reason)
	}
	k.signal()
}

// Enter returns a live session for a new claim and counts the caller as
// a waiter until Leave or Join, opening a session if there is none. While
// the session is suspended it waits for its verdict (or ctx). An
// idle session (kept since its last hold ended, not renewed since) whose
// deadline is less than a renew interval away is retired rather than
// used, so that a new hold does not start about to be lost.
func (k *Keeper[H]) Enter(ctx context.Context) (*Session[H], error) {
	for {
		k.mu.Lock()
		if k.closed {
			k.mu.Unlock()
			return nil, k.env.Errors.Closed
		}
		if verdict := k.verdictLocked(); verdict != nil {
			k.mu.Unlock()
			if err := waitDone(ctx, verdict); err != nil {
				return nil, err
			}
			continue
		}
		now := k.p.Clock.Now()
		if s := k.sess; s != nil && !s.retired && (k.busyLocked() || s.lease.Usable(k.mono(now))) {
			idle := !k.busyLocked()
			k.waiters++
			if !s.armed {
				k.armLocked(s)
			}
			k.startLocked(idle)
			k.mu.Unlock()
			return s, nil
		}
		if k.opening != nil {
			done := k.opening
			k.mu.Unlock()
			if err := waitDone(ctx, done); err != nil {
				return nil, err
			}
			continue
		}
		done := make(chan struct{})
		k.opening = done
		old := k.sess
		k.mu.Unlock()
		if old != nil {
			k.Retire(old, fmt.Errorf("%w: the idle session's deadline is too close", k.env.Errors.Lost)) // it has no holds
		}

		s, err := k.open(ctx)
		k.mu.Lock()
		k.opening = nil
		close(done)
		if err != nil {
			k.mu.Unlock()
			return nil, err
		}
		if k.closed {
			// Close came while the session opened: it is nobody's, and
			// its deadline timer would outlive the Keeper by a TTL.
			k.retireLocked(s, k.env.Errors.Closed)
			k.mu.Unlock()
			return nil, k.env.Errors.Closed
		}
		k.sess = s
		k.mu.Unlock()
	}
}

// waitDone waits until done is closed (nil) or ctx ends (its cause).
func waitDone(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// open creates a session. A reply that arrives after the deadline it
// would have does not count: the session is left to expire.
func (k *Keeper[H]) open(ctx context.Context) (*Session[H], error) {
	octx, cancel := context.WithTimeout(ctx, k.p.TTL-k.p.Margin)
	defer cancel()
	sent := k.p.Clock.Now()
	id, err := k.env.Open(octx, k.p.TTL)
	if err != nil {
		return nil, err
	}
	now := k.p.Clock.Now()
	lease, ok := queue.NewLease(k.p.TTL, k.p.Interval, k.mono(sent), k.mono(now))
	if !ok {
		return nil, fmt.Errorf("dsync: open session: reply after %v, past the deadline", now.Sub(sent))
	}
	s := &Session[H]{id: id, lease: lease, confirmed: sent, opened: sent, revokeChecked: sent}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	k.mu.Lock()
	k.armLocked(s)
	k.mu.Unlock()
	return s, nil
}

// Leave ends a waiter's use of s.
func (k *Keeper[H]) Leave(s *Session[H]) {
	k.mu.Lock()
	if k.sess == s && k.waiters > 0 {
		k.waiters--
	}
	k.mu.Unlock()
	k.signal()
}

// Join makes h a hold of session s, valid until s's deadline, and counts
// it instead of the waiter that made it. It reports false if s has been
// retired or is suspended, its deadline has passed or h's key is not
// covered until it; then it counts nothing and leaves the waiter counted,
// for the caller's Leave to count off: counting it off here too would
// leave another waiter of s uncounted, and s, seemingly idle, unrenewed
// and with no deadline timer when that waiter's hold starts (its loss
// would never be told).
func (k *Keeper[H]) Join(h H, s *Session[H]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.retired || s.sus != nil || k.sess != s || !k.coveredLocked(h, s) || !h.Start(k.deadlineLocked(s)) {
		return false
	}
	if k.waiters > 0 {
		k.waiters--
	}
	k.holds[h] = s
	if len(k.holds) == 1 {
		// The session begins to hold: its revoke checks come every two
		// thirds of a TTL from now on, and one more than that old is due
		// at once (revoke.go). The Keeper's loop, running while the
		// waiter was counted, reads it beside the grant.
		k.signalLocked()
	}
	return true
}

// Remove stops counting h. It reports whether h was kept by a resume
// (retake.go) of a session relied on now (not suspended again, nor
// retired): h's claim is then the caller's to end.
func (k *Keeper[H]) Remove(h H) (kept bool) {
	k.mu.Lock()
	kept = k.keptLocked(h)
	delete(k.holds, h)
	delete(k.kept, h)
	k.mu.Unlock()
	k.signal()
	return kept
}

func (k *Keeper[H]) signal() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.signalLocked()
}

func (k *Keeper[H]) signalLocked() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// startLocked starts the renewal goroutine if it is not running (the
// Client waits for it on Close, through Env.Go), and wakes it if it runs
// and the Keeper was idle (wasIdle).
func (k *Keeper[H]) startLocked(wasIdle bool) {
	if k.running {
		if wasIdle {
			// The loop, idle, may be waiting for its renewal before it
			// returns: it looks again, and times the checks now due.
			k.signalLocked()
		}
		return
	}
	k.running = true
	k.env.Go(k.run)
}

// busyLocked reports whether the session is in use: it has holds or
// waiters, or awaits its verdict (suspend.go). k.mu must be held.
func (k *Keeper[H]) busyLocked() bool {
	return len(k.holds) > 0 || k.waiters > 0 || (k.sess != nil && k.sess.sus != nil)
}
