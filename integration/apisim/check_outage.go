package apisim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// The promises of holds and terms across an outage of the store
// (dsync.ClientWithOutageGrace; outage runs, Options.Outages), as
// dsync.Mutex.LockContext and leader.Election.Campaign state them.
const (
	// PromiseResume: a hold (or term) taken back "holds again, with the
	// same Token", and "nobody else led in between".
	PromiseResume = "resume"
	// PromiseRelock: a re-lock "returns an error wrapping ErrLost that
	// says so" when the outage ended the hold, and only then (the store
	// was up without its holder: the credited rule, creditedDead).
	PromiseRelock = "relock"
	// PromiseFailover: "a holder cut off alone still loses, on time": the
	// key of a holder cut off from the store while it was up for others
	// is taken by a waiter within failoverBound of its deadline.
	PromiseFailover = "failover"
)

// CheckOutage judges the Relocks, and the holds of processes cut off
// alone in calm runs; nothing in a run without a grace.
func CheckOutage(h *History) []Violation {
	if h.OutageGrace == 0 {
		return nil
	}
	var vs []Violation
	keys := byKey(h)
	for _, r := range h.Relocks {
		if r.Held != nil {
			vs = append(vs, checkResumed(r, keys[r.Key])...)
			continue
		}
		if v, broken := checkRelockErr(h, r, keys[r.Key]); broken {
			vs = append(vs, v)
		}
	}
	if h.Calm {
		vs = append(vs, checkFailover(h, keys)...)
	}
	return vs
}

// checkResumed judges a Relock that held again: the same token, and no
// other hold of the key valid from the lost hold's end to the new one's
// start.
func checkResumed(r *Relock, hs []*Hold) []Violation {
	var vs []Violation
	if r.Held.Token != r.Lost.Token {
		vs = append(vs, Violation{PromiseResume, fmt.Sprintf("%v took %v back with another token", r.Held, r.Lost)})
	}
	for _, x := range hs {
		if x == r.Lost || x == r.Held || !x.Prim.exclusive() && !r.Held.Prim.exclusive() {
			continue
		}
		if x.Start.Before(r.Held.Start) && x.End().After(r.Lost.End()) {
			vs = append(vs, Violation{PromiseResume, fmt.Sprintf("%v held between %v and %v, which took it back", x, r.Lost, r.Held)})
		}
	}
	return vs
}

// checkRelockErr judges a Relock that returned an error: it must wrap
// the documented sentinel, and the hold must have ended: replaced (another
// hold of the key began after the loss; its own check is exclusion's and
// checkResumed's), proven dead by the store's record (creditedDead), or a
// fault that ends holds otherwise came between (exempt). A call whose own
// context ended first had no verdict and is not judged, but must have
// left the Mutex locked (Unlocked).
func checkRelockErr(h *History, r *Relock, hs []*Hold) (Violation, bool) {
	if r.Unlocked {
		return Violation{PromiseRelock, fmt.Sprintf("re-lock after %v returned its context's cause (%v), yet left the Mutex unlocked", r.Lost, r.Err)}, true
	}
	if r.CtxEnded {
		return Violation{}, false
	}
	wraps := errors.Is(r.Err, dsync.ErrLost)
	if r.Prim == PrimElection {
		wraps = wraps && errors.Is(r.Err, leader.ErrLeadershipLost)
	}
	if !wraps {
		return Violation{PromiseRelock, fmt.Sprintf("re-lock after %v returned %v, which does not wrap the sentinel", r.Lost, r.Err)}, true
	}
	if !h.Calm || r.Lost.Deadline.IsZero() {
		return Violation{}, false
	}
	ttl := h.TTLs[r.Proc]
	from := r.Lost.Deadline.Add(-2 * ttl)
	if relockExempt(h, r.Proc, from, r.Return) || emptiedInSession(h, r.Lost.Session, r.Return) {
		return Violation{}, false
	}
	exp := r.Lost.Deadline.Add(driverMargin(ttl))
	for _, x := range hs {
		if x.Proc == r.Proc || !x.Start.After(r.Lost.Start) || x.Start.After(r.Return) {
			continue
		}
		// Replaced: only by a waiter that may have found the owner dead.
		if creditedDead(h, exp, ttl, x.Start) {
			return Violation{}, false
		}
		return Violation{PromiseRelock, fmt.Sprintf("%v took the key of %v (deadline %v), suspended in an outage, though the store's record did not show it dead (faults %s)", x, r.Lost, r.Lost.Deadline.Format(tf), faultsWithin(h, r.Proc, from, x.Start))}, true
	}
	if unreachableThroughout(h, r.Proc, exp, exp.Add(h.OutageGrace)) {
		return Violation{}, false // the outage outlasted the grace
	}
	// The holder renews and checks within resumeSlack of the store's
	// return: the record then proves the session dead, or it resumes.
	back := reachableFrom(h, r.Proc, r.Lost.Deadline)
	by := minTime(r.Return, back.Add(resumeSlack(ttl)))
	if creditedDead(h, exp, ttl, by) || cutWithin(h, r.Proc, back, by) {
		return Violation{}, false // proven dead, or cut off again before it could resume
	}
	return Violation{PromiseRelock, fmt.Sprintf("re-lock after %v (deadline %v) returned at %v, though the store's record showed no end by %v (faults %s): %v", r.Lost, r.Lost.Deadline.Format(tf), r.Return.Format(tf), by.Format(tf), faultsWithin(h, r.Proc, from, r.Return), r.Err)}, true
}

// resumeSlack is how soon after the store answers it again a suspended
// holder in a calm run has renewed and read the record for its resume
// check: a probe every twelfth of a TTL (a quarter of the renew
// interval), a renewal and three reads, with time to spare.
func resumeSlack(ttl time.Duration) time.Duration { return ttl / 3 }

// faultsWithin lists the store's faults and process p's within [a, b].
func faultsWithin(h *History, p int, a, b time.Time) string {
	var out []string
	for _, f := range h.ProcFaults {
		if (f.Proc == p || f.Proc == -1) && !f.From.After(b) && !f.To.Before(a) {
			out = append(out, fmt.Sprintf("p%d %s [%v, %v]", f.Proc, f.Kind, f.From.Format(tf), f.To.Format(tf)))
		}
	}
	return fmt.Sprint(out)
}

// relockExempt reports whether process p, or the whole store, met in
// [a, b] a fault that may end a hold suspended in an outage other than
// by the credited rule: a pause, step or restart of p, an emptying, a
// revoke, a stalled gate.
func relockExempt(h *History, p int, a, b time.Time) bool {
	if h.emptiedBetween(a, b) {
		return true
	}
	for _, f := range h.ProcFaults {
		if f.From.After(b) || f.To.Before(a) {
			continue
		}
		switch {
		case f.Proc == p && (f.Kind == "pause" || f.Kind == "step" || f.Kind == "restart"):
			return true
		case f.Proc == -1 && f.Kind != "store outage":
			return true
		}
	}
	return false
}

// emptiedInSession reports whether the sessions collection (or all) was
// emptied after session was first opened and by t: its documents then
// lack the first generation, and its resume check finds it ended.
func emptiedInSession(h *History, session string, t time.Time) bool {
	i := slices.IndexFunc(h.Opens, func(o Open) bool { return o.Session == session })
	if i < 0 {
		return false
	}
	opened := h.Opens[i].At
	return h.emptiedBetween(opened, t) || slices.ContainsFunc(h.ProcFaults, func(f ProcFault) bool {
		return f.Proc == -1 && f.Kind == "sessions emptied" && f.From.After(opened) && !f.From.After(t)
	})
}

// creditedDead is the oracle's outage rule for a session of TTL ttl
// whose highest stored expiry is at least exp, judged with every stamp
// the store applied by at: dead if a run of stamps none of which is
// more than a break apart holds TTL of up-time after x = exp − TTL, or
// a stamp is at or after exp + grace. It takes the longest break any
// process's rule or record may use (half the longest TTL: a writer
// merges its stamps that far apart into one span), and every stamp the
// store applied, so that it finds dead whatever the library's record
// proves dead: an error of a re-lock it does not find dead is unfounded.
func creditedDead(h *History, exp time.Time, ttl time.Duration, at time.Time) bool {
	brk := slices.Max(h.TTLs) / 2
	x := exp.Add(-ttl)
	var ts []time.Time
	for _, s := range h.Stamps {
		if !s.At.After(at) && !s.At.Before(x.Add(-brk)) {
			ts = append(ts, s.At)
		}
	}
	slices.SortFunc(ts, time.Time.Compare)
	var first time.Time
	for i, t := range ts {
		if !t.Before(exp.Add(h.OutageGrace)) {
			return true
		}
		if i == 0 || t.Sub(ts[i-1]) > brk {
			first = t
		}
		if t.Sub(maxTime(first, x)) >= ttl {
			return true
		}
	}
	return false
}

// driverMargin is the library's margin of a TTL (driver.Margin): a
// deadline lies that much before the expiry its renewal stored.
func driverMargin(ttl time.Duration) time.Duration { return ttl / 20 }

// failoverBound is how long after the deadline of a holder cut off alone
// a waiter may take its key: its stored expiry, a renewal of the
// waiter's that proves the store up past it, a poll, and the round trips.
func failoverBound(ttl time.Duration) time.Duration { return ttl + 500*time.Millisecond }

// checkFailover judges, in calm runs, each hold lost while its process
// was cut off from the store ("unreachable" or "hang") and the store was
// up for the others, free of faults: if another process waited
// for its key from before its deadline to its deadline + failoverBound
// (or until it held), some other hold of the key began by then. The
// waiter's own renewals prove the store up. That hold may be of the cut
// process itself: another of its waiters queued ahead of the other
// process's (FIFO), once the lost hold's claim ended (a cut shorter than
// what its session's stored expiry had left ends no session, and the
// claim its resume kept is let go). Not judged: a key that stalled gates
// may keep waiting then (keyWaitedWithin).
func checkFailover(h *History, keys map[string][]*Hold) []Violation {
	var vs []Violation
	takenBack := make(map[*Hold]bool) // holds lost and taken back: not lost for good
	for _, x := range h.Holds {
		if x.Resumes != nil {
			takenBack[x.Resumes] = true
		}
	}
	for _, x := range h.Holds {
		if x.LostAt.IsZero() || x.Deadline.IsZero() || !x.Prim.exclusive() || x.Prim == PrimOnce || takenBack[x] {
			continue
		}
		ttl := h.TTLs[x.Proc]
		from, by := x.Deadline.Add(-ttl), x.Deadline.Add(failoverBound(ttl))
		if !cutOff(h, x.Proc, x.Deadline.Add(-ttl/2), x.Deadline) || storeFaulted(h, from, by) || othersFaulted(h, x.Proc, from, by) ||
			h.keyWaitedWithin(x.Key, from, by) {
			continue
		}
		w := waitedThroughout(h, x, from, by)
		if w == nil {
			continue
		}
		if !slices.ContainsFunc(keys[x.Key], func(y *Hold) bool {
			return y != x && y.Resumes != x && y.Start.After(x.Start) && !y.Start.After(by)
		}) {
			vs = append(vs, Violation{PromiseFailover, fmt.Sprintf("%v lost while its process alone was cut off (deadline %v): nobody held by %v, though p%d waited [%v, %v] (ok %v); faults %s",
				x, x.Deadline.Format(tf), by.Format(tf), w.Proc, w.Call.Format(tf), w.Return.Format(tf), w.OK, faultsWithin(h, x.Proc, from, by))})
		}
	}
	return vs
}

// cutOff reports whether process p was cut off from the store throughout
// [a, b] by a fault of its own.
func cutOff(h *History, p int, a, b time.Time) bool {
	return slices.ContainsFunc(h.ProcFaults, func(f ProcFault) bool {
		return f.Proc == p && (f.Kind == "unreachable" || f.Kind == "hang") && !f.From.After(a) && !f.To.Before(b)
	})
}

// othersFaulted reports whether a process other than p suffered a fault
// in [from, to]: its claims queued ahead of a waiter may then hold it up
// until that process's session is judged (a restart's withdrawals lost,
// a cut, a pause), which is no failover of p's.
func othersFaulted(h *History, p int, from, to time.Time) bool {
	return slices.ContainsFunc(h.ProcFaults, func(f ProcFault) bool {
		return f.Proc >= 0 && f.Proc != p && !f.From.After(to) && !f.To.Before(from)
	})
}

// storeFaulted reports whether a fault of the store (an outage, an
// emptying, a stalled gate until it landed) touched [a, b]. Stalled
// gates keep their own key waiting longer (keyWaitedWithin).
func storeFaulted(h *History, a, b time.Time) bool {
	return h.emptiedBetween(a, b) || slices.ContainsFunc(h.ProcFaults, func(f ProcFault) bool {
		return f.Proc == -1 && !f.From.After(b) && !f.To.Before(a)
	})
}

// waitedThroughout returns a wait of a process other than x's, free of
// faults in [from, by], for x's key (a blocking Lock) from before x's
// deadline to by or later, or until it held after x began (nil: none).
func waitedThroughout(h *History, x *Hold, from, by time.Time) *Wait {
	i := slices.IndexFunc(h.Waits, func(w *Wait) bool {
		return w.Proc != x.Proc && w.Key == x.Key && w.Call.Before(x.Deadline) &&
			(!w.Return.Before(by) || w.OK && w.Return.After(x.Start)) &&
			!slices.ContainsFunc(h.ProcFaults, func(f ProcFault) bool {
				return f.Proc == w.Proc && !f.From.After(by) && !f.To.Before(from)
			})
	})
	if i < 0 {
		return nil
	}
	return h.Waits[i]
}

// reachableFrom returns the first instant at or after t at which process
// p could reach the store (no store outage, no cut of its own).
func reachableFrom(h *History, p int, t time.Time) time.Time {
	for {
		moved := false
		for _, f := range h.ProcFaults {
			if (f.Proc == -1 && f.Kind == "store outage" || f.Proc == p && (f.Kind == "unreachable" || f.Kind == "hang")) && !f.From.After(t) && f.To.After(t) {
				t, moved = f.To, true
			}
		}
		if !moved {
			return t
		}
	}
}

// cutWithin reports whether process p was cut off from the store (a
// store outage or a cut of its own) at some time in (a, b].
func cutWithin(h *History, p int, a, b time.Time) bool {
	return slices.ContainsFunc(h.ProcFaults, func(f ProcFault) bool {
		return (f.Proc == -1 && f.Kind == "store outage" || f.Proc == p && (f.Kind == "unreachable" || f.Kind == "hang")) &&
			f.From.After(a) && !f.From.After(b)
	})
}

// unreachableThroughout reports whether the store could not be reached
// by process p throughout [a, b]: a store outage or a cut of p's own
// ("unreachable", "hang") at every instant.
func unreachableThroughout(h *History, p int, a, b time.Time) bool {
	var spans [][2]time.Time
	for _, f := range h.ProcFaults {
		if f.Proc == -1 && f.Kind == "store outage" || f.Proc == p && (f.Kind == "unreachable" || f.Kind == "hang") {
			spans = append(spans, [2]time.Time{f.From, f.To})
		}
	}
	slices.SortFunc(spans, func(x, y [2]time.Time) int { return x[0].Compare(y[0]) })
	reached := a
	for _, sp := range spans {
		if sp[0].After(reached) {
			break
		}
		reached = maxTime(reached, sp[1])
	}
	return !reached.Before(b)
}
