package dsync

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-dsync/dsync/internal/queue"
)

// A keeper owns the session that every primitive of a Client uses: one
// lease for all their holds and waiting claims, renewed by one call per
// interval however many there are. Its goroutine runs while the session
// has holds or waiters, and exits when it has none; the session itself is
// kept for the next Lock while its deadline has not passed. Each Client
// has one, and Close ends it.
type keeper struct {
	lease  lease // the Client's
	client *Client
	// origin is the reading of lease.clock that lease times count from.
	origin time.Time

	mu      sync.Mutex
	sess    *session      // the current session; nil when none or retired
	opening chan struct{} // closed when an OpenSession under way finishes
	waiters int           // claims waiting (or being made) in sess
	holds   map[*hold]struct{}
	running bool          // the renewal goroutine is running
	closed  bool          // the Client was closed
	wake    chan struct{} // tells the goroutine that a hold or waiter left
	// judgedOver, set only by tests (export_test.go), runs right after a
	// session was judged over by its deadline timer or by a renewal reply
	// that came too late, once k.mu is released and before the loss is
	// reported: where a late Unlock runs when a paused process resumes and
	// every timer fires at once (also clienthook.Settings.JudgedOver).
	// Guarded by mu.
	judgedOver func()
}

// A session is the lease a keeper renews: its local deadline and renewal
// schedule follow queue.Lease. When the deadline passes, or the store
// says the session is gone, the session is retired for good: its holds
// are lost, its waiting claims are withdrawn, and the next Lock opens a
// new session.
type session struct {
	id    string
	lease *queue.Lease // guarded by keeper.mu
	// retired: the session is over, set in the same locked step that
	// judged it over (retireLocked): its lease is retired, its holds are
	// lost, its waiters' ctx is cancelled. Guarded by keeper.mu.
	retired bool
	// why the session was retired; set with retired. Guarded by keeper.mu.
	why error
	// ctx is cancelled, with the reason, when the session is retired.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// stopTimer stops the deadline timer; armed says whether one is set.
	// An idle session (no holds, no waiters) has none: enter checks its
	// deadline before using it. Both guarded by keeper.mu.
	stopTimer func() bool
	armed     bool
	// refreshing: a refresh of the segments of its keys is under way
	// (refreshAsync). Guarded by keeper.mu.
	refreshing bool
	// confirmed is when the last renewal confirmed (or the open) was sent,
	// on the keeper's clock (health.go). Guarded by keeper.mu.
	confirmed time.Time
	// revokeChecked is when the last read of the session's revocation
	// was started (or the open sent), on the keeper's clock; revokeReading:
	// one is under way (revoked.go). Both guarded by keeper.mu.
	revokeChecked time.Time
	revokeReading bool
	// renewing is when the renewal under way was sent (zero if none);
	// renewErr, the failure of the last renewal that failed since the
	// last one confirmed (nil if none); expired: the session was retired
	// because its deadline passed (renew.go says what these report).
	// users are the primitives whose holds it lost. All guarded by
	// keeper.mu.
	renewing time.Time
	renewErr error
	expired  bool
	users    map[*core]bool
}

// mono is t on the scale of lease times.
func (k *keeper) mono(t time.Time) time.Duration { return t.Sub(k.origin) }

// deadline is s's local deadline on the clock's scale.
func (k *keeper) deadline(s *session) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.deadlineLocked(s)
}

// deadlineLocked is s's local deadline on the clock's scale; k.mu must be
// held.
func (k *keeper) deadlineLocked(s *session) time.Time { return k.origin.Add(s.lease.Deadline()) }

// armLocked sets s's deadline timer; k.mu must be held.
func (k *keeper) armLocked(s *session) {
	if s.armed {
		s.stopTimer()
	}
	s.stopTimer = k.lease.clock.AfterFunc(k.deadlineLocked(s).Sub(k.lease.clock.Now())+plantedLate(k.lease.ttl), func() { k.expireIfDue(s) })
	s.armed = true
}

// disarmLocked stops s's deadline timer; k.mu must be held.
func (k *keeper) disarmLocked(s *session) {
	if s.armed {
		s.stopTimer()
		s.armed = false
	}
}

// newKeeper returns c's keeper of lease l.
func newKeeper(c *Client, l lease) *keeper {
	return &keeper{lease: l, client: c, origin: l.clock.Now(), holds: make(map[*hold]struct{}), wake: make(chan struct{}, 1)}
}

// close retires the keeper's session for good (its holds are lost, its
// waiters withdraw) and refuses new claims.
func (k *keeper) close() {
	k.mu.Lock()
	k.closed = true
	s := k.sess
	k.mu.Unlock()
	if s != nil {
		k.retire(s, fmt.Errorf("%w: %w", ErrLost, ErrClosed))
	}
	k.signal()
}

// enter returns a live session for a new claim and counts the caller as
// a waiter until leave or join, opening a session if there is none. An
// idle session (kept since its last hold ended, not renewed since) whose
// deadline is less than a renew interval away is retired rather than
// used, so that a new hold does not start about to be lost.
func (k *keeper) enter(ctx context.Context) (*session, error) {
	for {
		k.mu.Lock()
		if k.closed {
			k.mu.Unlock()
			return nil, ErrClosed
		}
		now := k.lease.clock.Now()
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
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		done := make(chan struct{})
		k.opening = done
		old := k.sess
		k.mu.Unlock()
		if old != nil {
			k.retire(old, fmt.Errorf("%w: the idle session's deadline is too close", ErrLost)) // it has no holds
		}

		s, err := k.open(ctx)
		k.mu.Lock()
		k.opening = nil
		close(done)
		if err != nil {
			k.mu.Unlock()
			return nil, err
		}
		k.sess = s
		k.mu.Unlock()
	}
}

// open creates a session. A reply that arrives after the deadline it
// would have does not count: the session is left to expire.
func (k *keeper) open(ctx context.Context) (*session, error) {
	octx, cancel := context.WithTimeout(ctx, k.lease.ttl-k.lease.margin)
	defer cancel()
	sent := k.lease.clock.Now()
	id, err := k.client.openSession(octx, k.lease.ttl)
	if err != nil {
		return nil, err
	}
	now := k.lease.clock.Now()
	lease, ok := queue.NewLease(k.lease.ttl, k.lease.interval, k.mono(sent), k.mono(now))
	if !ok {
		return nil, fmt.Errorf("dsync: open session: reply after %v, past the deadline", now.Sub(sent))
	}
	s := &session{id: id, lease: lease, confirmed: sent, revokeChecked: sent}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	k.mu.Lock()
	k.armLocked(s)
	k.mu.Unlock()
	return s, nil
}

// leave ends a waiter's use of s.
func (k *keeper) leave(s *session) {
	k.mu.Lock()
	if k.sess == s && k.waiters > 0 {
		k.waiters--
	}
	k.mu.Unlock()
	k.signal()
}

// join makes h a hold of session s, valid until s's deadline, and counts
// it instead of the waiter that made it. It reports false if s has been
// retired, its deadline has passed or h's key is not covered until it;
// then it counts nothing and leaves the waiter counted, for the caller's
// leave to count off: counting it off here too would leave another waiter
// of s uncounted, and s, seemingly idle, unrenewed and with no deadline
// timer when that waiter's hold starts (its Lost would never close).
func (k *keeper) join(h *hold, s *session) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.retired || k.sess != s || !k.coveredLocked(h, s) || !h.start(k.deadlineLocked(s)) {
		return false
	}
	if k.waiters > 0 {
		k.waiters--
	}
	h.keeper, h.sess = k, s
	k.holds[h] = struct{}{}
	if len(k.holds) == 1 {
		// The session begins to hold: its revoke checks come every two
		// thirds of a TTL from now on, and one more than that old is due
		// at once (revoked.go). The keeper's loop, running while the
		// waiter was counted, reads it beside the grant.
		k.signalLocked()
	}
	return true
}

// remove stops counting h.
func (k *keeper) remove(h *hold) {
	k.mu.Lock()
	delete(k.holds, h)
	k.mu.Unlock()
	k.signal()
}

func (k *keeper) signal() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.signalLocked()
}

func (k *keeper) signalLocked() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// startLocked starts the renewal goroutine if it is not running (the
// Client waits for it on Close), and wakes it if it runs and the keeper
// was idle (wasIdle).
func (k *keeper) startLocked(wasIdle bool) {
	if k.running {
		if wasIdle {
			// The loop, idle, may be waiting for its renewal before it
			// returns: it looks again, and times the checks now due.
			k.signalLocked()
		}
		return
	}
	k.running = true
	k.client.running.Add(1)
	go func() {
		defer k.client.running.Done()
		k.run()
	}()
}

func (k *keeper) busyLocked() bool { return len(k.holds) > 0 || k.waiters > 0 }

// expireIfDue retires s if its deadline has passed: no renewal confirmed
// in time. Judging it over and retiring it are one step under k.mu, so
// that whoever takes k.mu next (an Unlock, a Lost, another timer) sees s
// retired and its holds lost, never a lease that is over in a session
// that still looks live.
func (k *keeper) expireIfDue(s *session) {
	k.mu.Lock()
	var lost []*hold
	now := k.lease.clock.Now()
	due := !s.retired && s.lease.Expire(k.mono(now)-plantedLate(k.lease.ttl))
	if due {
		s.expired = true
		lost = k.retireLocked(s, fmt.Errorf("%w: no renewal confirmed before the local deadline%s", ErrLost, k.noRenewalLocked(s, now)))
	}
	hook := k.judgedOver
	k.mu.Unlock()
	if due && hook != nil {
		hook()
	}
	tellLost(lost)
}

// retiredWith returns why s was retired, or nil while it is not.
func (k *keeper) retiredWith(s *session) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !s.retired {
		return nil
	}
	return s.why
}

// retire ends s for good: its holds are lost, its waiters are told through
// s.ctx, and the next claim gets a new session.
func (k *keeper) retire(s *session, reason error) {
	k.mu.Lock()
	lost := k.retireLocked(s, reason)
	k.mu.Unlock()
	tellLost(lost)
}

// retireLocked ends s for good, in the locked step that judged it over:
// its lease is retired, its waiters' ctx is cancelled, and its holds are
// lost (their Lost channels closed) and no longer counted. It returns the
// holds it lost, whose loss the caller reports (tellLost) once k.mu is
// released: reports call the user's handlers. k.mu must be held.
func (k *keeper) retireLocked(s *session, reason error) []*hold {
	if s.retired {
		return nil
	}
	s.retired, s.why = true, reason
	s.lease.Retire()
	k.disarmLocked(s)
	if k.sess == s {
		k.sess = nil
		k.waiters = 0
	}
	// Cancelling runs no user code under k.mu: functions registered with
	// context.AfterFunc run in goroutines of their own.
	s.cancel(reason)
	var lost []*hold
	for h := range k.holds {
		if h.sess != s {
			continue
		}
		delete(k.holds, h)
		if h.markLost(reason) {
			lost = append(lost, h)
			if s.users == nil {
				s.users = make(map[*core]bool)
			}
			s.users[h.p] = true
		}
	}
	k.signalLocked()
	return lost
}

// tellLost reports the loss of holds that retireLocked lost.
func tellLost(lost []*hold) {
	for _, h := range lost {
		h.tellLost()
	}
}
