package dsync

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/internal/chain"
)

// ErrSessionGone is what a renewal returns (wrapped) when the session no
// longer exists: it certainly was not extended.
var ErrSessionGone = errors.New("dsync: session gone")

// A keeper owns the session that every Mutex sharing a Client, a TTL, a
// renew interval and a clock uses: one lease for all their holds and
// waiting claims, renewed by one call per interval however many there
// are. Its goroutine runs while the session has holds or waiters, and
// exits when it has none; the session itself is kept for the next Lock
// while its deadline has not passed. Its Client owns it, and Close ends
// it.
type keeper struct {
	id     keeperID
	client *Client
	// origin is the reading of id.clock that lease times count from.
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
	// every timer fires at once. Guarded by mu.
	judgedOver func()
}

// A session is the lease a keeper renews: its local deadline and renewal
// schedule follow chain.Lease. When the deadline passes, or the backend
// says the session is gone, the session is retired for good: its holds
// are lost, its waiting claims are withdrawn, and the next Lock opens a
// new session.
type session struct {
	id    string
	lease *chain.Lease // guarded by keeper.mu
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
	s.stopTimer = k.id.clock.AfterFunc(k.deadlineLocked(s).Sub(k.id.clock.Now())+plantedLate(k.id.ttl), func() { k.expireIfDue(s) })
	s.armed = true
}

// disarmLocked stops s's deadline timer; k.mu must be held.
func (k *keeper) disarmLocked(s *session) {
	if s.armed {
		s.stopTimer()
		s.armed = false
	}
}

type keeperID struct {
	ttl      time.Duration
	interval time.Duration
	clock    Clock
	// own is set only when clock cannot be a map key: the primitive then
	// gets a keeper of its own.
	own *core
}

// keeperOf returns the keeper p's holds join, creating it.
func (c *Client) keeperOf(p *core) (*keeper, error) {
	id := keeperID{ttl: p.cfg.ttl, interval: p.cfg.renewInterval, clock: p.cfg.clock}
	if !reflect.TypeOf(p.cfg.clock).Comparable() {
		id.own = p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.sweepLocked(id)
	k := c.keepers[id]
	if k == nil {
		k = &keeper{id: id, client: c, origin: id.clock.Now(), holds: make(map[*hold]struct{}), wake: make(chan struct{}, 1)}
		c.keepers[id] = k
	}
	return k, nil
}

// sweepLocked drops keepers that are idle and whose session is gone or
// past its deadline (except the one for id, about to be used), so that
// Mutexes a process stopped using are not kept forever. c.mu must be
// held.
func (c *Client) sweepLocked(except keeperID) {
	for id, k := range c.keepers {
		if id == except {
			continue
		}
		k.mu.Lock()
		dead := !k.running && !k.busyLocked() && k.opening == nil &&
			(k.sess == nil || !k.id.clock.Now().Before(k.deadlineLocked(k.sess)))
		k.mu.Unlock()
		if dead {
			delete(c.keepers, id)
		}
	}
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
		now := k.id.clock.Now()
		if s := k.sess; s != nil && !s.retired && (k.busyLocked() || s.lease.Usable(k.mono(now))) {
			k.waiters++
			if !s.armed {
				k.armLocked(s)
			}
			k.startLocked()
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
	octx, cancel := context.WithTimeout(ctx, k.id.ttl-k.id.ttl/20)
	defer cancel()
	sent := k.id.clock.Now()
	id, err := k.client.openSession(octx, k.id.ttl)
	if err != nil {
		return nil, err
	}
	now := k.id.clock.Now()
	lease, ok := chain.NewLease(k.id.ttl, k.id.interval, k.mono(sent), k.mono(now))
	if !ok {
		return nil, fmt.Errorf("dsync: open session: reply after %v, past the deadline", now.Sub(sent))
	}
	s := &session{id: id, lease: lease, confirmed: sent}
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
// it instead of the waiter that made it. It reports false (and counts
// nothing) if s has been retired or its deadline has passed.
func (k *keeper) join(h *hold, s *session) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sess == s && k.waiters > 0 {
		k.waiters--
	}
	if s.retired || k.sess != s || !k.coveredLocked(h, s) || !h.start(k.deadlineLocked(s)) {
		k.signalLocked()
		return false
	}
	h.keeper, h.sess = k, s
	k.holds[h] = struct{}{}
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

// startLocked starts the renewal goroutine if it is not running; the
// Client waits for it on Close.
func (k *keeper) startLocked() {
	if !k.running {
		k.running = true
		k.client.running.Add(1)
		go func() {
			defer k.client.running.Done()
			k.run()
		}()
	}
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
	due := !s.retired && s.lease.Expire(k.mono(k.id.clock.Now())-plantedLate(k.id.ttl))
	if due {
		lost = k.retireLocked(s, fmt.Errorf("%w: no renewal confirmed before the local deadline", ErrLost))
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

// run renews the current session when its lease says (chain.Lease.Due)
// while it has holds or waiters.
func (k *keeper) run() {
	clock := k.id.clock
	for {
		k.mu.Lock()
		s := k.sess
		if s == nil || !k.busyLocked() {
			if s != nil {
				k.disarmLocked(s)
			}
			k.running = false
			k.mu.Unlock()
			return
		}
		due := k.origin.Add(s.lease.Due())
		k.mu.Unlock()

		fired := make(chan struct{})
		stop := clock.AfterFunc(due.Sub(clock.Now()), func() { close(fired) })
		select {
		case <-fired:
		case <-k.wake:
			stop()
			continue
		}
		k.renew(s)
	}
}

// renew renews s once and applies the outcome to its lease. A hold relies
// on its key's coverage as on its session, so the renewal extends the
// lease no further than the earliest coverage among the keys held (the
// coverage known now: capping needs no request). Extending that coverage
// (chain.Engine.Refresh) takes a request per key held each time a bucket
// begins, and goes on beside renewals (refreshAsync): a process holding
// thousands of keys would otherwise renew late, every bucket span, by the
// time those requests take. Coverage reaches a bucket past the current
// one, so the extension has that long.
func (k *keeper) renew(s *session) {
	ctx, cancel := context.WithTimeout(s.ctx, k.id.ttl)
	defer cancel()
	k.mu.Lock()
	k.capLocked(s)
	k.mu.Unlock()
	k.refreshAsync(s)
	sent := k.id.clock.Now()
	err := k.client.renewSession(ctx, s.id, k.id.ttl)
	if errors.Is(err, ErrSessionGone) {
		k.retire(s, fmt.Errorf("%w: the backend no longer knows the session", ErrLost))
		return
	}
	now := k.id.clock.Now()
	k.client.renewFailed.Store(err != nil)
	if err != nil {
		k.mu.Lock()
		s.lease.Fail(k.mono(now))
		k.mu.Unlock()
		if s.ctx.Err() == nil {
			err = fmt.Errorf("dsync: renew session: %w", err)
			k.report(err)
			k.client.observe(func(o *Observer) {
				if o.RenewFailed != nil {
					o.RenewFailed(err)
				}
			})
		}
		return
	}
	// A confirmation at or after the deadline in force does not count: the
	// session may have been judged expired meanwhile, and it is over (the
	// lease retires it now rather than wait for its deadline timer, which
	// may run late after a suspend). The renewal may also be applied later
	// than others, even after this one's retry: harmless, since a stored
	// expiry only grows (the backend sees to it on stores whose updates
	// are not atomic). Judging the session over and retiring it are one
	// step, as in expireIfDue.
	k.mu.Lock()
	r := Renewal{TTL: k.id.ttl, Latency: now.Sub(sent), Headroom: k.deadlineLocked(s).Sub(now)}
	switch ev := s.lease.Confirm(k.mono(sent), k.mono(now)); ev {
	case chain.LeaseExtended:
		k.armLocked(s)
		s.confirmed = sent
		k.mu.Unlock()
		k.client.observe(func(o *Observer) {
			if o.Renewed != nil {
				o.Renewed(r)
			}
		})
	case chain.LeaseLate:
		lost := k.retireLocked(s, fmt.Errorf("%w: a renewal was confirmed only after the local deadline", ErrLost))
		hook := k.judgedOver
		k.mu.Unlock()
		if hook != nil {
			hook()
		}
		tellLost(lost)
	default:
		k.mu.Unlock()
	}
}

// check renews s at once, unless it was retired: a claim found the store
// emptied or restored, and the session's documents may be gone with it;
// if so, the renewal retires it.
func (k *keeper) check(s *session) {
	k.mu.Lock()
	retired := s.retired
	k.mu.Unlock()
	if !retired {
		k.renew(s)
	}
}

// report sends a renewal error to the primitives that use the session,
// once per distinct primitive.
func (k *keeper) report(err error) {
	k.mu.Lock()
	seen := make(map[*core]bool)
	for h := range k.holds {
		seen[h.p] = true
	}
	k.mu.Unlock()
	if k.id.own != nil {
		seen[k.id.own] = true
	}
	for p := range seen {
		p.report(err)
	}
}

// capLocked caps s's lease at the earliest coverage of the keys its holds
// rely on (none: no cap). k.mu must be held.
func (k *keeper) capLocked(s *session) {
	cp, held := time.Duration(0), false
	for h := range k.holds {
		if h.sess != s {
			continue
		}
		held = true
		if c := k.coverLocked(h.claim.Key); cp == 0 || c < cp {
			cp = c
		}
	}
	if !held {
		s.lease.SetCap(0)
		return
	}
	s.lease.SetCap(max(cp, 1))
}

// refreshAsync refreshes the segments of s's keys in a goroutine of its
// own, unless a refresh of s is under way. It is bounded by half a bucket
// span (what is left is refreshed at the next renewal).
func (k *keeper) refreshAsync(s *session) {
	k.mu.Lock()
	if s.refreshing {
		k.mu.Unlock()
		return
	}
	s.refreshing = true
	k.mu.Unlock()
	k.client.running.Add(1)
	go func() {
		defer k.client.running.Done()
		ctx, cancel := context.WithTimeout(s.ctx, max(k.id.ttl, k.client.eng.Span()/2))
		defer cancel()
		k.refresh(ctx, s)
		k.mu.Lock()
		s.refreshing = false
		k.mu.Unlock()
	}()
}

// refresh extends the coverage of the keys of s's active holds, loses
// the holds whose key's segment lapsed, and caps s's lease at the
// earliest coverage left.
func (k *keeper) refresh(ctx context.Context, s *session) {
	k.mu.Lock()
	var keys []string
	for h := range k.holds {
		if h.sess == s {
			keys = append(keys, h.claim.Key)
		}
	}
	k.mu.Unlock()
	if len(keys) == 0 {
		k.mu.Lock()
		s.lease.SetCap(0)
		k.mu.Unlock()
		return
	}
	lapsed, err := k.client.eng.Refresh(ctx, keys)
	if err != nil && s.ctx.Err() == nil {
		k.report(fmt.Errorf("dsync: keep segments covered: %w", err))
	}
	var lost []*hold
	k.mu.Lock()
	for h := range k.holds {
		if h.sess == s && slices.Contains(lapsed, h.claim.Key) {
			lost = append(lost, h)
		}
	}
	k.capLocked(s)
	k.mu.Unlock()
	for _, h := range lost {
		h.lose(fmt.Errorf("%w: the segment of %q lapsed", ErrLost, h.claim.Key))
	}
}

// coverLocked is when the engine's coverage of key's segment ends, as a
// local reading on the lease's scale (judged from the latest possible
// store time: early); k.mu must be held.
func (k *keeper) coverLocked(key string) time.Duration {
	end := k.client.eng.CoverEnd(key)
	if end.IsZero() {
		return 0
	}
	return k.mono(k.id.clock.Now()) + end.Sub(k.client.store.ServerTime().Latest)
}

// coveredLocked reports whether h's key stays covered past s's deadline,
// so that a hold that starts now relies on nothing that ends before its
// session; k.mu must be held.
func (k *keeper) coveredLocked(h *hold, s *session) bool {
	return k.coverLocked(h.claim.Key) >= s.lease.Deadline()
}
