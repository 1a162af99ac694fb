package apisim

import (
	"fmt"
	"time"
)

// PromiseProgress: the progress deadline's promises (WithProgressDeadline).
const PromiseProgress = "progress"

// progressSlack is how late Lost() may close past a progress deadline
// in fake time (as lostSlack).
const progressSlack = lostSlack

// handoff is how long, in a calm run, the next waiter may take to hold
// once a stalled hold's claim was released: a waiter of another process
// learns of the release at its next poll, and the wait on the claim it
// finds ahead of it may take up to a TTL.
func handoff(ttl time.Duration) time.Duration { return ttl + 2*pollInterval }

// CheckProgress judges the holds with a progress deadline d
// (dsync.WithProgressDeadline):
//
//   - (i) a hold whose work reported nothing for d is stalled: Lost()
//     closes by its last report plus d (its holder may have given it up
//     first);
//   - (ii) a hold is not stalled while its work reported within d;
//   - (iii) in a calm run, once a hold of a Mutex or an RWMutex's write
//     lock stalled, the next waiter holds within the margin (TTL/20) and
//     a handoff (the claim is released): a blocking Lock of its key that
//     waited from before the stall to past that bound, while nothing of
//     the key began in between, broke it. Not judged: a stall near
//     an emptying or a fault, or while stalled gates may keep the key
//     waiting (up to three bucket spans after they were sent: a start
//     meets them until then), or while a lock set had a claim of the key
//     (a Set's member holds from its grant, but its Hold begins only
//     when the Set's Lock returns with every member).
//
// A pause freezes a process's timers, not its goroutines (the actor
// reports only while the process runs): a hold whose process was paused
// for more than d/2 around a report is exempt from (i) and (ii), as
// CheckHeld exempts paused holds, and a shorter pause delays (i)'s due
// time by its length. A clock step makes a deadline come early in real
// time: a hold whose process's clock stepped is exempt from (ii).
func CheckProgress(h *History) []Violation {
	var vs []Violation
	for _, x := range h.Holds {
		l := x.Progress
		if l == nil || len(l.Reports) == 0 || !x.Start.Before(x.End()) {
			continue
		}
		if v, ok := checkProgressDue(h, x); !ok {
			vs = append(vs, v)
		}
		if v, ok := checkProgressEarly(h, x); !ok {
			vs = append(vs, v)
		}
		if h.Calm {
			if v, ok := checkProgressHandoff(h, x); !ok {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// checkProgressDue is (i).
func checkProgressDue(h *History, x *Hold) (Violation, bool) {
	l := x.Progress
	// The first report with none within d after it.
	r := l.Reports[len(l.Reports)-1]
	for i, t := range l.Reports[:len(l.Reports)-1] {
		if l.Reports[i+1].Sub(t) > l.D {
			r = t
			break
		}
	}
	due := r.Add(l.D + progressSlack)
	paused := h.pausedFor(x.Proc, r, due.Add(2*l.TTL))
	if paused > l.D/2 {
		return Violation{}, true
	}
	due = due.Add(paused)
	for _, t := range []time.Time{x.Ended, x.LostAt} {
		if !t.IsZero() && !t.After(due) {
			return Violation{}, true
		}
	}
	when := "never"
	if !x.LostAt.IsZero() {
		when = "at " + x.LostAt.Format(tf)
	}
	return Violation{PromiseProgress, fmt.Sprintf("%v: deadline %v, last report %v, Lost() closed %s (due %v)",
		x, l.D, r.Format(tf), when, due.Format(tf))}, false
}

// checkProgressEarly is (ii).
func checkProgressEarly(h *History, x *Hold) (Violation, bool) {
	l := x.Progress
	if !l.Stalled || x.LostAt.IsZero() {
		return Violation{}, true
	}
	s := x.LostAt
	var r time.Time
	for _, t := range l.Reports {
		if t.After(s) {
			break
		}
		r = t
	}
	if s.Sub(r) >= l.D {
		return Violation{}, true
	}
	if h.pausedFor(x.Proc, x.Start, s) > l.D/2 || h.stepped(x.Proc, x.Start, s) {
		return Violation{}, true
	}
	return Violation{PromiseProgress, fmt.Sprintf("%v: stalled at %v, %v after its report at %v (deadline %v)",
		x, s.Format(tf), s.Sub(r), r.Format(tf), l.D)}, false
}

// checkProgressHandoff is (iii).
func checkProgressHandoff(h *History, x *Hold) (Violation, bool) {
	l := x.Progress
	if !l.Stalled || x.LostAt.IsZero() || !x.Prim.exclusive() {
		return Violation{}, true
	}
	s := x.LostAt
	bound := s.Add(l.TTL/20 + handoff(l.TTL))
	if h.emptiedBetween(s.Add(-l.TTL), bound) || h.faultedWithin(s.Add(-l.TTL), bound) || h.keyWaitedWithin(x.Key, s.Add(-l.TTL), bound) {
		return Violation{}, true
	}
	for _, y := range h.Holds {
		if y != x && y.Key == x.Key && y.Start.After(s) && !y.Start.After(bound) {
			return Violation{}, true // the key was handed on
		}
	}
	if h.setClaimedWithin(x.Key, s, bound) {
		return Violation{}, true // the key may have been handed to a lock set
	}
	for _, wt := range h.Waits {
		if wt.Key == x.Key && wt.Call.Before(x.Start) && wt.Return.After(bound) {
			return Violation{PromiseProgress, fmt.Sprintf("%v: stalled at %v; p%d's Lock (called %v) still waited at %v, returned %v (ok %v)",
				x, s.Format(tf), wt.Proc, wt.Call.Format(tf), bound.Format(tf), wt.Return.Format(tf), wt.OK)}, false
		}
	}
	return Violation{}, true
}

// pausedFor returns how long process p was paused within [a, b].
func (h *History) pausedFor(p int, a, b time.Time) time.Duration {
	var d time.Duration
	for _, f := range h.ProcFaults {
		if f.Proc != p || f.Kind != "pause" {
			continue
		}
		from, to := maxTime(f.From, a), minTime(f.To, b)
		if to.After(from) {
			d += to.Sub(from)
		}
	}
	return d
}

// stepped reports whether process p's clock was stepped within [a, b].
func (h *History) stepped(p int, a, b time.Time) bool {
	for _, f := range h.ProcFaults {
		if f.Proc == p && f.Kind == "step" && !f.From.Before(a) && !f.From.After(b) {
			return true
		}
	}
	return false
}

// faultedWithin reports whether any process suffered a fault within
// [a, b].
func (h *History) faultedWithin(a, b time.Time) bool {
	for _, f := range h.ProcFaults {
		if !f.From.After(b) && !f.To.Before(a) {
			return true
		}
	}
	return false
}

// keyWaitedWithin reports whether stalled gates of key may have kept it
// waiting at some time in [a, b]: a start of the key meets them until
// their KeyWaits, long after they landed.
func (h *History) keyWaitedWithin(key string, a, b time.Time) bool {
	for _, f := range h.ProcFaults {
		if f.Key == key && !f.From.After(b) && !f.KeyWaits.Before(a) {
			return true
		}
	}
	return false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
