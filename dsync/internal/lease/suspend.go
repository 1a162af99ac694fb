package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// Suspension: with an outage grace (Params.Grace), a session whose local
// deadline passes is suspended rather than retired, unless it was retired
// for good first (the store forgot it, a revocation, Close) or has nothing
// to keep (no hold, no kept claim, no waiter: idleLocked). In the step
// that judges it over, as a retirement would, its holds are lost (Lost
// closes at the deadline, as ever: past it nothing proves they hold), but
// their claims are left unended to the engine's suspension (Env.Suspend),
// the session stays the Keeper's, no hold joins it (Join), and Enter
// waits for its verdict. The Keeper's loop then runs the suspended steps
// (suspendedStep): a probe, a read of the store, every quarter renew
// interval (one at a time: one the store does not answer is cut off
// after a third of a TTL, and the next follows); only once one replied, a renewal (one per step, not one per
// quarter interval for the whole outage: each renewal of unknown outcome
// moves the session to a new document, so an outage would leave a pile of
// inserts in flight), and after it is confirmed the suspension's check
// (queue.Suspension.Check): resumed, the session is relied on again, with
// the same claims; dead, it is retired and its suspended claims marked
// dead (a retirement of a suspended session always marks them: its owner
// stopped relying on them, so the markers end nothing that holds, however
// late they land); undecided, the next step tries again. At the deadline
// plus the grace plus a TTL (local time) the Keeper gives up: it retires
// the session, as at a deadline without a grace.

// A Suspension is the engine's side of a suspended session: its resume
// check and its dead markers (queue.Suspension).
type Suspension interface {
	Check(ctx context.Context, l *queue.Lease, sent time.Duration) (queue.ResumeVerdict, error)
	MarkDead(ctx context.Context, l *queue.Lease) error
}

// suspension is a suspended session's state: its engine's suspension, the
// holds it lost, when the Keeper gives up on it, and its verdict.
type suspension[H Hold] struct {
	engine Suspension
	holds  []H
	since  time.Time     // on the Keeper's clock: the deadline it was suspended at
	giveUp time.Time     // on the Keeper's clock: the deadline + Grace + TTL
	done   chan struct{} // closed at the verdict: resumed or retired
}

// suspendLocked suspends s, instead of retiring it, if the Keeper has an
// outage grace and s's deadline has passed at at (its time on the leases'
// scale, judged at now), and reports whether it did: the holds it lost
// (MarkLost) are returned for the caller to tell (TellLost). An engine
// that refuses the suspension (Env.Suspend) has s retired at once, as
// without a grace. k.mu must be held.
func (k *Keeper[H]) suspendLocked(s *Session[H], now time.Time, at time.Duration) ([]H, bool) {
	if k.p.Grace <= 0 || k.env.Suspend == nil || k.env.Probe == nil || s.retired || s.sus != nil || k.idleLocked(s) || !s.lease.Suspend(at) {
		return nil, false
	}
	why := fmt.Sprintf("no renewal confirmed before the local deadline%s", k.noRenewalLocked(s, now))
	reason := fmt.Errorf("%w: %s", k.env.Errors.Lost, why)
	if k.env.Errors.Suspended != nil {
		reason = fmt.Errorf("%w: %w: %s: the session is suspended until the store confirms a renewal and its check, for up to %v",
			k.env.Errors.Lost, k.env.Errors.Suspended, why, k.p.Grace+k.p.TTL)
	}
	var lost []H
	for h, hs := range k.holds {
		// A hold not active (ended, or stalled and being released) is
		// left out: its claim ends its own way.
		if hs == s && h.MarkLost(reason) {
			lost = append(lost, h)
		}
	}
	s.lost = append(s.lost, lost...)
	// Claims a resume kept and no hold took over yet are the session's
	// too: checked and resumed, or marked dead, with the others.
	held := append(lost[:len(lost):len(lost)], k.keptOfLocked(s)...)
	claims := make([]queue.Ref, len(held))
	for i, h := range held {
		claims[i] = h.Ref()
	}
	sus, err := k.env.Suspend(s.id, s.lease, k.leaseNow, claims)
	if err != nil {
		s.expired = true
		k.retireLocked(s, fmt.Errorf("%w: %s (not suspended: %v)", k.env.Errors.Lost, why, err))
		return lost, true
	}
	dl := k.deadlineLocked(s)
	s.sus = &suspension[H]{engine: sus, holds: held, since: dl, giveUp: dl.Add(k.p.Grace + k.p.TTL), done: make(chan struct{})}
	k.disarmLocked(s)
	s.stopTimer = k.p.Clock.AfterFunc(s.sus.giveUp.Sub(now), func() { k.ExpireIfDue(s) })
	s.armed = true
	// The first probe is due at once (Lease.Suspend), in a loop that may
	// be asleep until the renewal the deadline made moot.
	k.signalLocked()
	return lost, true
}

// idleLocked reports whether s has nothing a suspension would keep: no
// hold, no claim a resume kept, no waiter. Such a session is retired at
// its deadline, as without a grace: its Keeper's loop has stopped (it
// runs while the session is in use), so no probe would come to give a
// suspension its verdict, and a new claim's Enter would wait for it until
// the Keeper gave up, a grace and a TTL later (the public-API outage
// simulation: a Lock sent nothing for 3.6 s after an RUnlock of a hold
// lost in an outage judged the idle session over). k.mu must be held.
func (k *Keeper[H]) idleLocked(s *Session[H]) bool {
	if k.sess == s && k.waiters > 0 {
		return false
	}
	for _, hs := range k.holds {
		if hs == s {
			return false
		}
	}
	return true
}

// leaseNow is the leases' clock now (Env.Suspend's mono).
func (k *Keeper[H]) leaseNow() time.Duration { return k.mono(k.p.Clock.Now()) }

// giveUpLocked retires s, suspended, if its time to resume has run out at
// now (the deadline plus the grace plus a TTL), and reports whether it
// did, returning the holds the retirement lost. k.mu must be held.
func (k *Keeper[H]) giveUpLocked(s *Session[H], now time.Time) ([]H, bool) {
	if s.retired || s.sus == nil || now.Before(s.sus.giveUp) {
		return nil, false
	}
	s.expired = true
	return k.retireLocked(s, fmt.Errorf("%w: the store confirmed no renewal and check of the suspended session within %v of its local deadline%s",
		k.env.Errors.Lost, k.p.Grace+k.p.TTL, k.noRenewalLocked(s, now))), true
}

// endSuspensionLocked ends s's suspension, if any, as s is retired: it
// gives the verdict and marks the suspended claims dead, in a goroutine
// of its own (a marker of unknown outcome is left to the engine's end
// queue). k.mu must be held, and s's lease retired.
func (k *Keeper[H]) endSuspensionLocked(s *Session[H]) {
	sus := s.sus
	if sus == nil {
		return
	}
	s.sus = nil
	close(sus.done)
	l := *s.lease // retired; the copy is the goroutine's
	k.env.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), k.p.TTL)
		defer cancel()
		if err := sus.engine.MarkDead(ctx, &l); err != nil {
			k.env.Logger.Debug("dsync: marking the claims of a suspended session dead", "session", s.id, "err", err)
		}
	})
}

// suspended reports whether s is suspended.
func (k *Keeper[H]) suspended(s *Session[H]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return s.sus != nil
}

// verdictLocked returns, while the current session is suspended, a
// channel closed at its verdict; nil otherwise. k.mu must be held.
func (k *Keeper[H]) verdictLocked() <-chan struct{} {
	if s := k.sess; s != nil && s.sus != nil {
		return s.sus.done
	}
	return nil
}

// AwaitVerdict waits while s is suspended, until its verdict or ctx's
// end: nil if s is relied on (resumed, or never suspended), why it was
// retired if it was, ctx's cause if that came first.
func (k *Keeper[H]) AwaitVerdict(ctx context.Context, s *Session[H]) error {
	k.mu.Lock()
	var done <-chan struct{}
	if s.sus != nil {
		done = s.sus.done
	}
	k.mu.Unlock()
	if done != nil {
		if err := waitDone(ctx, done); err != nil {
			return err
		}
	}
	return k.RetiredWith(s)
}

// suspendedStep is one step of the Keeper's loop for s, suspended: give
// up if its time has run out; else probe the store, and once a probe
// replied, renew s (keeping its keys covered) and run the check.
func (k *Keeper[H]) suspendedStep(s *Session[H]) {
	k.ExpireIfDue(s) // gives up, past its time
	if !k.suspended(s) {
		return
	}
	sent := k.p.Clock.Now()
	pctx, cancel := context.WithTimeout(s.ctx, k.p.TTL/3)
	err := k.env.Probe(pctx, s.id)
	cancel()
	if err != nil {
		// The next probe a quarter interval after this one was sent.
		k.mu.Lock()
		s.lease.Fail(k.mono(sent))
		k.mu.Unlock()
		return
	}
	k.mu.Lock()
	k.capLocked(s)
	k.mu.Unlock()
	k.refreshAsync(s)
	k.renewSuspended(s)
}

// renewSuspended renews s, suspended, and on a confirmed renewal runs its
// check and applies the verdict. The renewal is sent only while s is
// still suspended and its time to resume has not run out (its renewal
// check): once retired, a renewal would raise the expiry of a session its
// owner no longer relies on.
func (k *Keeper[H]) renewSuspended(s *Session[H]) {
	ctx, cancel := context.WithTimeout(s.ctx, k.p.TTL)
	defer cancel()
	k.mu.Lock()
	sent := k.p.Clock.Now()
	s.renewing = sent
	k.mu.Unlock()
	now, err := k.sendRenewal(ctx, s, func() bool { return k.stillSuspended(s) })
	switch {
	case errors.Is(err, queue.ErrRenewalLate):
		k.ExpireIfDue(s)
		return
	case errors.Is(err, k.env.Errors.Gone):
		k.Retire(s, fmt.Errorf("%w: the store no longer knows the suspended session", k.env.Errors.Lost))
		return
	}
	k.env.Outcome(err != nil)
	k.mu.Lock()
	if err != nil || s.sus == nil || s.lease.Confirm(k.mono(sent), k.mono(now)) != queue.LeaseSuspended {
		if err != nil && s.sus != nil {
			s.renewErr = err
			s.lease.Fail(k.mono(now))
		}
		k.mu.Unlock()
		return
	}
	sus, l := s.sus.engine, *s.lease // the check reads its own copy of the lease, under no lock
	k.mu.Unlock()
	v, why := sus.Check(ctx, &l, k.mono(sent))
	k.verdict(s, v, why, sent)
}

// stillSuspended reports whether s is suspended and its time to resume
// has not run out.
func (k *Keeper[H]) stillSuspended(s *Session[H]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !s.retired && s.sus != nil && k.p.Clock.Now().Before(s.sus.giveUp)
}

// verdict applies the check's verdict v (why: its reason) on s's renewal
// sent at sent. Resumed, s's lease is resumed now, under k.mu, as the
// check resumed its copy, unless s was retired meanwhile or its deadline
// from sent has passed since; the holds it lost, still counted, are kept
// (retake.go).
func (k *Keeper[H]) verdict(s *Session[H], v queue.ResumeVerdict, why error, sent time.Time) {
	switch v {
	case queue.ResumeDead:
		k.Retire(s, fmt.Errorf("%w: the suspended session was found ended: %v", k.env.Errors.Lost, why))
		return
	case queue.ResumeResumed:
	default:
		k.mu.Lock()
		if s.sus != nil {
			s.lease.Fail(k.leaseNow())
		}
		k.mu.Unlock()
		k.env.Logger.Debug("dsync: the suspended session's check did not decide", "session", s.id, "err", why)
		return
	}
	k.mu.Lock()
	if s.sus == nil || s.retired {
		k.mu.Unlock()
		return
	}
	if !s.lease.Resume(k.mono(sent), k.leaseNow()) {
		s.lease.Fail(k.leaseNow())
		k.mu.Unlock()
		return
	}
	sus := s.sus
	s.sus = nil
	var kept, gone []H
	for _, h := range sus.holds {
		if k.holds[h] == s {
			k.kept[h] = true // counted, lost, until taken over or let go
			kept = append(kept, h)
		} else {
			gone = append(gone, h) // its owner gave it up meanwhile
		}
	}
	s.confirmed, s.renewErr = sent, nil
	k.armLocked(s)
	close(sus.done)
	k.signalLocked()
	k.mu.Unlock()
	if k.env.Resumed != nil {
		k.env.Resumed(s.id, sus.holds, sus.since)
	}
	k.release(gone)
	if len(kept) > 0 {
		k.letGoLater(kept)
	}
}
