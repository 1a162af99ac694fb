package dsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/internal/chain"
)

// The keeper's renewals: its goroutine renews the session when the
// lease says (chain.Lease.Due) while it has holds or waiters, and applies
// each outcome to the lease; a failed renewal is reported to the
// primitives whose holds rely on it.

// run renews the current session when its lease says (chain.Lease.Due)
// while it has holds or waiters, and reads whether it was revoked when
// revoked.go says (revokeCheckDueLocked; a wake-up recomputes it, as
// when the session begins to hold). A renewal goes on in a goroutine of
// its own, one at a time, so that a slow one never holds up a revoke
// check that falls due meanwhile: the check's period alone bounds how
// late a revoke is seen. The loop returns only once its renewal is back.
func (k *keeper) run() {
	clock := k.lease.clock
	var renewed chan struct{} // closed when the renewal under way is back; nil: none
	for {
		k.mu.Lock()
		s := k.sess
		if s == nil || !k.busyLocked() {
			if renewed != nil {
				// Idle, but a renewal is under way: wait for it, or for
				// a hold or waiter to come back meanwhile (startLocked
				// wakes a loop that runs), whose checks are then due.
				k.mu.Unlock()
				select {
				case <-renewed:
					renewed = nil
				case <-k.wake:
				}
				continue
			}
			if s != nil {
				k.disarmLocked(s)
			}
			k.running = false
			k.mu.Unlock()
			return
		}
		due := k.origin.Add(s.lease.Due())
		renews := renewed == nil
		check, checks := k.revokeCheckDueLocked(s)
		k.mu.Unlock()

		var next time.Time
		switch {
		case renews && checks:
			next = due
			if check.Before(next) {
				next = check
			}
		case renews:
			next = due
		case checks:
			next = check
		}
		var fired chan struct{}
		stop := func() bool { return false }
		if renews || checks {
			fired = make(chan struct{})
			stop = clock.AfterFunc(next.Sub(clock.Now()), func() { close(fired) })
		}
		select {
		case <-fired:
		case <-renewed:
			stop()
			renewed = nil
			continue
		case <-k.wake:
			stop()
			continue
		}
		if checks && !check.After(next) {
			k.checkRevokedAsync(s)
		}
		if renews && !due.After(next) {
			done := make(chan struct{})
			renewed = done
			go func() {
				defer close(done)
				k.renew(s)
			}()
		}
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
	ctx, cancel := context.WithTimeout(s.ctx, k.lease.ttl)
	defer cancel()
	k.mu.Lock()
	k.capLocked(s)
	k.mu.Unlock()
	k.refreshAsync(s)
	sent := k.lease.clock.Now()
	err := k.client.renewSession(ctx, s.id, k.lease.ttl)
	if errors.Is(err, ErrSessionGone) {
		k.retire(s, fmt.Errorf("%w: the store no longer knows the session", ErrLost))
		return
	}
	now := k.lease.clock.Now()
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
	// expiry only grows (the store sees to it on stores whose updates
	// are not atomic). Judging the session over and retiring it are one
	// step, as in expireIfDue.
	k.mu.Lock()
	r := Renewal{TTL: k.lease.ttl, Latency: now.Sub(sent), Headroom: k.deadlineLocked(s).Sub(now)}
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
	for p := range seen {
		p.report(err)
	}
}
