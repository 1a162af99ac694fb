package lease

import "fmt"

// The end of a session: judged over (its deadline passed, a renewal came
// too late, the store forgot it, a revocation was read, Close) and
// retired in one step under the Keeper's lock, its holds lost in that
// step and told of their loss once the lock is released.

// ExpireIfDue retires s if its deadline has passed: no renewal confirmed
// in time. Judging it over and retiring it are one step under k.mu, so
// that whoever takes k.mu next (an Unlock, a Lost, another timer) sees s
// retired and its holds lost, never a lease that is over in a session
// that still looks live. The deadline timer calls it; so do a hold's
// Lost and Unlock, which may run first after the process was paused.
//
// With an outage grace it suspends s instead (suspendLocked), and retires
// a suspended s whose time to resume has run out (giveUpLocked).
func (k *Keeper[H]) ExpireIfDue(s *Session[H]) {
	k.mu.Lock()
	now := k.p.Clock.Now()
	if s.retired {
		k.mu.Unlock()
		return
	}
	if lost, ok := k.suspendLocked(s, now, k.judgedAt(now)); ok {
		k.judged(lost)
		return
	}
	if lost, ok := k.giveUpLocked(s, now); ok {
		k.judged(lost)
		return
	}
	if !s.lease.Expire(k.judgedAt(now)) {
		k.mu.Unlock()
		return
	}
	s.expired = true
	k.judged(k.retireLocked(s, fmt.Errorf("%w: no renewal confirmed before the local deadline%s", k.env.Errors.Lost, k.noRenewalLocked(s, now))))
}

// judged ends the locked step that judged a session over (retired or
// suspended it), losing lost: it releases k.mu, runs the test's hook
// (SetJudgedOver), and tells the holds of their loss.
func (k *Keeper[H]) judged(lost []H) {
	hook := k.judgedOver
	k.mu.Unlock()
	if hook != nil {
		hook()
	}
	TellLost(lost)
}

// RetiredWith returns why s was retired, or nil while it is not.
func (k *Keeper[H]) RetiredWith(s *Session[H]) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !s.retired {
		return nil
	}
	return s.why
}

// Retire ends s for good: its holds are lost, its waiters are told through
// s's context, and the next claim gets a new session.
func (k *Keeper[H]) Retire(s *Session[H], reason error) {
	TellLost(k.RetireUntold(s, reason))
}

// RetireUntold is Retire without telling the holds of their loss: it
// returns the holds it lost, whose loss the caller reports (TellLost).
// Tests use it to stand in the moment between the step that retires a
// session and that report.
func (k *Keeper[H]) RetireUntold(s *Session[H], reason error) []H {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.retireLocked(s, reason)
}

// retireLocked ends s for good, in the locked step that judged it over:
// its lease is retired, its waiters' ctx is cancelled, and its holds are
// lost (Hold.MarkLost) and no longer counted. It returns the holds it
// lost, whose loss the caller reports (TellLost) once k.mu is released:
// reports call the user's handlers. k.mu must be held.
func (k *Keeper[H]) retireLocked(s *Session[H], reason error) []H {
	if s.retired {
		return nil
	}
	s.retired, s.why = true, reason
	s.lease.Retire()
	k.disarmLocked(s)
	k.endSuspensionLocked(s)
	if k.sess == s {
		k.sess = nil
		k.waiters = 0
	}
	// Cancelling runs no user code under k.mu: functions registered with
	// context.AfterFunc run in goroutines of their own.
	s.cancel(reason)
	var lost []H
	for h, hs := range k.holds {
		if hs != s {
			continue
		}
		delete(k.holds, h)
		delete(k.kept, h)
		if h.MarkLost(reason) {
			lost = append(lost, h)
			s.lost = append(s.lost, h)
		}
	}
	k.signalLocked()
	return lost
}

// TellLost reports the loss of holds that a retirement lost.
func TellLost[H Hold](lost []H) {
	for _, h := range lost {
		h.TellLost()
	}
}

// heldLocked returns the holds of s that k counts. k.mu must be held.
func (k *Keeper[H]) heldLocked(s *Session[H]) []H {
	var holds []H
	for h, hs := range k.holds {
		if hs == s {
			holds = append(holds, h)
		}
	}
	return holds
}
