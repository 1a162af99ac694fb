package queue

import (
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A Lease is a session as its owner sees it: the local deadline until
// which the owner may rely on it, and when to renew it. Times are local
// monotonic readings on any fixed scale (the owner's clock), counting time
// the machine spends suspended. A Lease only decides; its owner sends the
// renewals and runs the timers, so that the dsync keeper and the
// simulation share these rules.
//
// The rules: the deadline is the send time of the last open or renewal
// confirmed in time, plus the TTL, minus the margin (TTL/20); a renewal
// confirmed at or after the deadline in force does not count, and the
// session is then over (retired) for good; the next renewal is due a renew
// interval after the last one that counted, or a quarter of it after one
// that failed.
//
// A lease of an engine with an outage grace may instead be suspended at
// its deadline (Suspend; its caller decides): its holds are lost as at a
// retirement, but its claims are left unended, and a renewal confirmed
// later counts only through the resume check (Suspension.Check, resume.go),
// which either resumes the lease (Resume) or finds it dead.
type Lease struct {
	ttl, interval time.Duration
	sent          time.Duration // the last open or renewal that counted
	deadline      time.Duration
	retryAt       time.Duration // after a failed renewal: when to try again
	failed        bool
	retired       bool
	suspended     bool
	// cap bounds what a renewal may extend the deadline to (0: nothing):
	// the end of the coverage of the keys its holds rely on (SetCap).
	cap time.Duration
	bug Bug
}

// LeaseEvent is what a confirmed renewal did to a Lease.
type LeaseEvent int

const (
	// LeaseExtended: the deadline moved later.
	LeaseExtended LeaseEvent = iota
	// LeaseKept: confirmed in time, but no later than a renewal already
	// counted (sent earlier).
	LeaseKept
	// LeaseLate: confirmed at or after the deadline: the lease is now
	// retired, and its holds are lost.
	LeaseLate
	// LeaseIgnored: the lease was already retired.
	LeaseIgnored
	// LeaseSuspended: the lease is suspended; the renewal counts only
	// through the resume check (Suspension.Check).
	LeaseSuspended
)

// NewLease returns the lease of a session opened by a request sent at
// sent and confirmed at now, and whether it is usable: a confirmation at
// or after the deadline it would have does not count.
func NewLease(ttl, interval, sent, now time.Duration) (*Lease, bool) {
	l := &Lease{ttl: ttl, interval: interval, sent: sent, deadline: trustedUntil(sent, ttl)}
	if now >= l.deadline {
		l.retired = true
		return l, false
	}
	return l, true
}

// SetBug plants a protocol error (tests only).
func (l *Lease) SetBug(b Bug) {
	if b != NoBug && !planted {
		panic("queue: planting a bug needs -tags dsync_planted")
	}
	l.bug = b
}

// Deadline is the local deadline: the lease may be relied on strictly
// before it.
func (l *Lease) Deadline() time.Duration { return l.deadline }

// Retired reports whether the lease is over.
func (l *Lease) Retired() bool { return l.retired }

// Suspended reports whether the lease is suspended (Suspend): neither
// relied on nor over.
func (l *Lease) Suspended() bool { return l.suspended }

// Sent is the send time of the last open or renewal that counted.
func (l *Lease) Sent() time.Duration { return l.sent }

// Due is when the next renewal should be sent.
func (l *Lease) Due() time.Duration {
	if l.failed {
		return l.retryAt
	}
	return l.sent + l.interval
}

// Usable reports whether an idle lease (one renewed by nobody since its
// last hold ended) may take a new claim at now: its deadline must be at
// least a renew interval (or half the TTL) away, so that a hold does not
// start about to be lost.
func (l *Lease) Usable(now time.Duration) bool {
	return !l.retired && !l.suspended && l.deadline-now >= min(l.interval, l.ttl/2)
}

// Confirm applies a renewal sent at sent and confirmed at now.
func (l *Lease) Confirm(sent, now time.Duration) LeaseEvent {
	if l.retired {
		return LeaseIgnored
	}
	if l.suspended {
		return LeaseSuspended
	}
	if ev, late := l.confirmedLate(now); late {
		return ev
	}
	l.failed = false
	d := trustedUntil(sent, l.ttl)
	if l.cap > 0 {
		d = min(d, l.cap)
	}
	if d > l.deadline {
		l.sent, l.deadline = sent, d
		return LeaseExtended
	}
	if l.cap > 0 && sent > l.sent {
		// Capped: the renewal counts for the schedule, not the deadline.
		l.sent = sent
	}
	return LeaseKept
}

// SetCap bounds the deadline later renewals may extend the lease to, to c
// (0: no bound): a hold relies on its key's segment being covered as well
// as on its session (see Engine.CoverEnd), so its owner caps the lease at
// the earliest end of coverage among the keys it holds. The deadline in
// force never moves earlier.
func (l *Lease) SetCap(c time.Duration) { l.cap = c }

// Fail records a renewal that failed at now (its outcome unknown): the
// next one is due a quarter interval later.
func (l *Lease) Fail(now time.Duration) {
	l.failed, l.retryAt = true, now+l.interval/4
}

// Expire retires the lease if its deadline has passed at now, and
// reports whether it did. It leaves a suspended lease alone: the resume
// check, or its caller giving up (Retire), ends that.
func (l *Lease) Expire(now time.Duration) bool {
	if l.retired || l.suspended || now < l.deadline {
		return false
	}
	l.retired = true
	return true
}

// Suspend suspends the lease if its deadline has passed at now, instead
// of retiring it, and reports whether it did: its holds are lost as by
// Expire, but its claims are to be left unended, and no claim of it may
// hold while it is suspended. Its next renewal is due at once (then a
// quarter interval after each that fails, or is not counted: Fail); a
// renewal confirmed meanwhile counts only through the resume check
// (Suspension.Check). Only the caller knows whether its engine has an
// outage grace (Engine.Suspend refuses one without): without one it
// calls Expire.
func (l *Lease) Suspend(now time.Duration) bool {
	if l.retired || l.suspended || now < l.deadline {
		return false
	}
	l.suspended = true
	l.failed, l.retryAt = true, now
	return true
}

// Resume ends a suspension (Suspend) on a renewal sent at sent whose
// resume check (Suspension.Check) passed at now: the lease is relied on
// again until trustedUntil(sent), within the bound set by SetCap, as if
// the renewal had been confirmed in time. It refuses, and reports false,
// when that deadline is not after now (the check finished too late), or
// the lease is not suspended.
func (l *Lease) Resume(sent, now time.Duration) bool {
	if !l.suspended || l.retired {
		return false
	}
	d := trustedUntil(sent, l.ttl)
	if l.cap > 0 {
		d = min(d, l.cap)
	}
	if now >= d {
		return false
	}
	l.suspended, l.failed = false, false
	l.sent, l.deadline = sent, max(l.deadline, d)
	return true
}

// Retire ends the lease for good (its session is gone, or was given up,
// or found dead after a suspension), and reports whether it was live
// (relied on, or suspended).
func (l *Lease) Retire() bool {
	was := !l.retired
	l.retired, l.suspended = true, false
	return was
}

// trustedUntil is when a lease of ttl confirmed by a request sent at sent
// stops being trusted: ttl after the send, less the safety margin
// (driver.Margin).
func trustedUntil(sent, ttl time.Duration) time.Duration {
	return sent + ttl - driver.Margin(ttl)
}
