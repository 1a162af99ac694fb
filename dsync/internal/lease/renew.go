package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The Keeper's renewals: its goroutine renews the session when the
// lease says (queue.Lease.Due) while it has holds or waiters, and applies
// each outcome to the lease; a failed renewal is reported to the
// users of the holds that rely on it.

// run renews the current session when its lease says (queue.Lease.Due)
// while it has holds or waiters, and reads whether it was revoked when
// revoke.go says (revokeCheckDueLocked; a wake-up recomputes it, as
// when the session begins to hold). A renewal goes on in a goroutine of
// its own, one at a time, so that a slow one never holds up a revoke
// check that falls due meanwhile: the check's period alone bounds how
// late a revoke is seen. The loop returns only once its renewal is back.
func (k *Keeper[H]) run() {
	var renewed chan struct{} // closed when the renewal under way is back; nil: none
	for {
		k.mu.Lock()
		s := k.sess
		if s == nil || !k.busyLocked() {
			if renewed == nil {
				k.stopLocked(s)
				k.mu.Unlock()
				return
			}
			k.mu.Unlock()
			// Idle, but a renewal is under way: wait for it, or for
			// a hold or waiter to come back meanwhile (startLocked
			// wakes a loop that runs), whose checks are then due.
			select {
			case <-renewed:
				renewed = nil
			case <-k.wake:
			}
			continue
		}
		d := k.dueLocked(s, renewed == nil)
		k.mu.Unlock()

		next := d.next()
		fired, back := k.sleep(next, d.renews || d.checks, renewed)
		if back {
			renewed = nil
		}
		if !fired {
			continue
		}
		if d.checks && !d.check.After(next) {
			k.checkRevokedAsync(s)
		}
		if d.renews && !d.renew.After(next) {
			renewed = k.renewAsync(s, k.takeStamps())
		}
	}
}

// dueLocked is what the loop has to do for s, and when: a renewal when
// its lease says, or at once while a Stamp call waits (stamp.go), if
// renews (none is under way); its revoke check. k.mu must be held.
func (k *Keeper[H]) dueLocked(s *Session[H], renews bool) loopDue {
	d := loopDue{renews: renews, renew: k.origin.Add(s.lease.Due())}
	if now := k.p.Clock.Now(); len(k.stamps) > 0 && now.Before(d.renew) {
		d.renew = now
	}
	d.check, d.checks = k.revokeCheckDueLocked(s)
	return d
}

// loopDue is what the Keeper's loop has to do for its session, and when.
type loopDue struct {
	renews bool      // a renewal is to be sent (none is under way)
	renew  time.Time // when the lease says to renew
	checks bool      // the store records revocations: a check is to come
	check  time.Time // when the revoke check falls due
}

// next is when the first of d's tasks falls due (zero if none).
func (d loopDue) next() time.Time {
	switch {
	case d.renews && d.checks && d.check.Before(d.renew):
		return d.check
	case d.renews:
		return d.renew
	case d.checks:
		return d.check
	}
	return time.Time{}
}

// sleep waits until next, if timed, or until a wake-up, or until the
// renewal under way (renewed; nil if none) is back. fired: next came;
// back: the renewal came back (and nothing else was waited for).
func (k *Keeper[H]) sleep(next time.Time, timed bool, renewed <-chan struct{}) (fired, back bool) {
	clock := k.p.Clock
	var timer chan struct{}
	stop := func() bool { return false }
	if timed {
		timer = make(chan struct{})
		stop = clock.AfterFunc(next.Sub(clock.Now()), func() { close(timer) })
	}
	select {
	case <-timer:
		return true, false
	case <-renewed:
		stop()
		return false, true
	case <-k.wake:
		stop()
		return false, false
	}
}

// stopLocked ends the loop's run: the Keeper is idle, and s (if any)
// needs no deadline timer. k.mu must be held.
func (k *Keeper[H]) stopLocked(s *Session[H]) {
	if s != nil {
		k.disarmLocked(s)
	}
	answerStamps(k.takeStampsLocked(), false) // no renewal will come for them
	k.running = false
}

// renewAsync renews s in a goroutine of its own, and returns a channel
// closed when the renewal is back; stamps are the Stamp calls it answers
// then.
func (k *Keeper[H]) renewAsync(s *Session[H], stamps []chan bool) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer answerStamps(stamps, true)
		if k.suspended(s) {
			k.suspendedStep(s)
			return
		}
		k.renew(s)
	}()
	return done
}

// renew renews s once and applies the outcome to its lease. A hold relies
// on its key's coverage as on its session, so the renewal extends the
// lease no further than the earliest coverage among the keys held (the
// coverage known now: capping needs no request). Extending that coverage
// (Env.Refresh) takes a request per key held each time a bucket begins,
// and goes on beside renewals (refreshAsync): a process holding thousands
// of keys would otherwise renew late, every bucket span, by the time
// those requests take. Coverage reaches a bucket past the current one,
// so the extension has that long.
func (k *Keeper[H]) renew(s *Session[H]) {
	ctx, cancel := context.WithTimeout(s.ctx, k.p.TTL)
	defer cancel()
	k.mu.Lock()
	k.capLocked(s)
	k.mu.Unlock()
	k.refreshAsync(s)
	k.mu.Lock()
	sent := k.p.Clock.Now()
	if !k.reliedLocked(s, sent) {
		// Over, or past its deadline with the timer yet to run (a
		// pause, a suspend): its owner stopped relying on it, and
		// readers may have found it expired. A renewal sent now would
		// raise its stored expiry to a TTL past now, further than any
		// renewal sent in time, past what those readers remember
		// (statuspage.ClaimInfo.Expired): its claims would read live again, and
		// hold up the next claimers until that expiry.
		k.mu.Unlock()
		k.ExpireIfDue(s)
		return
	}
	s.renewing = sent
	k.mu.Unlock()
	// Checked once more where the expiry is computed (a pause may fall
	// between here and there): past the deadline, nothing is sent.
	now, err := k.sendRenewal(ctx, s, func() bool { return k.relied(s) })
	if errors.Is(err, queue.ErrRenewalLate) {
		k.ExpireIfDue(s)
		return
	}
	if errors.Is(err, k.env.Errors.Gone) {
		k.Retire(s, fmt.Errorf("%w: the store no longer knows the session", k.env.Errors.Lost))
		return
	}
	k.env.Outcome(err != nil)
	if err != nil {
		k.mu.Lock()
		s.lease.Fail(k.mono(now))
		level, err := k.renewFailedLocked(s, err, now.Sub(sent))
		k.mu.Unlock()
		if err != nil {
			k.reportRenewal(s, err, level)
		}
		return
	}
	k.confirmed(s, sent, now)
}

// sendRenewal sends s's renewal, whose send time the caller recorded in
// s.renewing, while still holds where its expiry is computed; it clears
// s.renewing and returns when the reply came, and the renewal's error.
// Both renew and renewSuspended send theirs so.
func (k *Keeper[H]) sendRenewal(ctx context.Context, s *Session[H], still func() bool) (time.Time, error) {
	err := k.env.Renew(queue.WithRenewalCheck(ctx, still), s.id, k.p.TTL)
	now := k.p.Clock.Now()
	k.mu.Lock()
	s.renewing = time.Time{}
	k.mu.Unlock()
	return now, err
}

// relied reports whether s's owner still relies on it now: it is not
// retired, and its local deadline has not passed.
func (k *Keeper[H]) relied(s *Session[H]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reliedLocked(s, k.p.Clock.Now())
}

// reliedLocked is relied at now; k.mu is held.
func (k *Keeper[H]) reliedLocked(s *Session[H], now time.Time) bool {
	return !s.retired && k.judgedAt(now) < s.lease.Deadline()
}

// confirmed applies to s the confirmation, at now, of its renewal sent at
// sent. A confirmation at or after the deadline in force does not count:
// the session may have been judged expired meanwhile, and it is over (the
// lease retires it now rather than wait for its deadline timer, which
// may run late after a suspend). The renewal may also be applied later
// than others, even after this one's retry: harmless, since a stored
// expiry only grows (the store sees to it on stores whose updates are
// not atomic). Judging the session over and retiring it are one step,
// as in ExpireIfDue.
func (k *Keeper[H]) confirmed(s *Session[H], sent, now time.Time) {
	k.mu.Lock()
	if lost, ok := k.suspendLocked(s, now, k.mono(now)); ok {
		// Late, with an outage grace: suspended rather than retired.
		k.judged(lost)
		return
	}
	s.renewErr = nil
	latency, headroom := now.Sub(sent), k.deadlineLocked(s).Sub(now)
	switch ev := s.lease.Confirm(k.mono(sent), k.mono(now)); ev {
	case queue.LeaseExtended:
		k.armLocked(s)
		s.confirmed = sent
		k.mu.Unlock()
		k.env.Renewed(latency, headroom)
	case queue.LeaseLate:
		k.judged(k.retireLocked(s, fmt.Errorf("%w: a renewal was confirmed only after the local deadline", k.env.Errors.Lost)))
	default:
		k.mu.Unlock()
	}
}

// Check renews s at once, unless it was retired: a claim found the store
// emptied or restored, and the session's documents may be gone with it;
// if so, the renewal retires it.
func (k *Keeper[H]) Check(s *Session[H]) {
	k.mu.Lock()
	retired := s.retired
	k.mu.Unlock()
	if !retired {
		k.renew(s)
	}
}

// How a failed renewal is reported: at Warn, once per run of failures
// (the first; the others at Debug, though each still reaches the error
// handlers and observers), and even when the session was retired while
// it was out. A store that hangs gives no answer before the session's
// deadline retires it, which cuts the renewal short: that renewal is
// the failure to report, and the loss names it too (noRenewalLocked).

// renewFailedLocked records err, the failure of a renewal of s that took
// took, and returns at which level to report it and what, or nil: after a
// retirement other than its deadline's (Close, a revocation, the store
// forgetting the session) the session is over for a reason of its own,
// which that retirement reports, and its renewal no longer matters.
// k.mu must be held.
func (k *Keeper[H]) renewFailedLocked(s *Session[H], err error, took time.Duration) (slog.Level, error) {
	ended := k.env.Errors.Ended(err)
	cut := s.retired && (ended || errors.Is(err, context.Canceled))
	switch {
	case s.retired && !s.expired, errors.Is(err, k.env.Errors.Closed):
		return 0, nil
	case cut && ended:
		err = fmt.Errorf("dsync: renew session: no reply within %v, when the session's local deadline passed", took.Round(time.Millisecond))
	case cut:
		err = fmt.Errorf("%w (cut short %v after it was sent, when the session's local deadline passed)", err, took.Round(time.Millisecond))
	}
	level := slog.LevelWarn
	if s.renewErr != nil {
		level = slog.LevelDebug
	}
	s.renewErr = err
	return level, err
}

// noRenewalLocked says why no renewal of s was confirmed by its deadline,
// which has passed at now: a renewal still out, and the failure of the
// last one that answered, if any. k.mu must be held.
func (k *Keeper[H]) noRenewalLocked(s *Session[H], now time.Time) string {
	var why []string
	if !s.renewing.IsZero() {
		why = append(why, fmt.Sprintf("a renewal sent %v before had no reply", now.Sub(s.renewing).Round(time.Millisecond)))
	}
	if s.renewErr != nil {
		why = append(why, fmt.Sprintf("the last renewal that answered failed: %v", s.renewErr))
	}
	if len(why) == 0 {
		return ""
	}
	return ": " + strings.Join(why, "; ")
}

// reportRenewal reports err, a failed renewal of s, through
// Env.RenewFailed, with the holds that rely on s (or did, when it was
// retired).
func (k *Keeper[H]) reportRenewal(s *Session[H], err error, level slog.Level) {
	k.mu.Lock()
	var holds []H
	if s.retired {
		holds = append(holds, s.lost...)
	} else {
		holds = k.heldLocked(s)
	}
	k.mu.Unlock()
	k.env.RenewFailed(holds, err, level)
}
