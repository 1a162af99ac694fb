package apisim

import (
	"fmt"
	"slices"
)

// The checkers: one per public promise, each stated as the package
// documentation states it. Each takes the whole history and returns the
// promises it saw broken. The tokens', FIFO's and Once's checkers, and
// their steps, have files of their own (check_tokens.go, check_fifo.go,
// check_once.go), and the watchers' (check_watch.go).

// Promises, as the violations name them.
const (
	PromiseExclusion = "exclusion"   // Mutex, RWMutex writers, Once's runs, elections
	PromiseReaders   = "rw"          // RWMutex: a writer excludes readers
	PromiseLimit     = "limit"       // Semaphore: the units of valid holds fit one limit
	PromiseTokens    = "tokens"      // tokens strictly increase per key
	PromiseFIFO      = "fifo"        // waiters hold in the order they queued
	PromiseLost      = "lost"        // Lost() closes at the deadline
	PromiseHeld      = "held"        // Lock returns only with the lock
	PromiseOnce      = "once"        // Do's return value against the runs
	PromiseLeader    = "one-leader"  // one leader at a time, per term
	PromiseLeaderTok = "term-tokens" // terms' tokens increase
	PromiseWatch     = "watch"       // what a watcher reports of who leads never goes back
)

// Check runs every checker.
func Check(h *History) []Violation {
	var vs []Violation
	vs = append(vs, CheckExclusion(h)...)
	vs = append(vs, CheckLimit(h)...)
	vs = append(vs, CheckTokens(h)...)
	vs = append(vs, CheckTokensAcrossEmptyings(h)...)
	vs = append(vs, CheckFIFO(h)...)
	vs = append(vs, CheckLost(h)...)
	vs = append(vs, CheckHeld(h)...)
	vs = append(vs, CheckOnce(h)...)
	vs = append(vs, CheckWatch(h)...)
	vs = append(vs, CheckProgress(h)...)
	vs = append(vs, CheckUpgrade(h)...)
	vs = append(vs, CheckSets(h)...)
	vs = append(vs, CheckSetCycles(h)...)
	return vs
}

// byKey groups the holds by stored key, each group in order of start.
// A hold that was never valid (it began at or after its deadline, which
// CheckHeld judges) is left out: it is no hold for the other promises.
func byKey(h *History) map[string][]*Hold {
	m := make(map[string][]*Hold)
	for _, x := range h.Holds {
		if !x.Start.Before(x.End()) {
			continue
		}
		m[x.Key] = append(m[x.Key], x)
	}
	for _, hs := range m {
		slices.SortStableFunc(hs, func(a, b *Hold) int { return a.Start.Compare(b.Start) })
	}
	return m
}

func overlap(a, b *Hold) bool { return a.Start.Before(b.End()) && b.Start.Before(a.End()) }

// CheckExclusion: "While a hold is valid, no other hold of its key is
// valid" (Mutex, an RWMutex's writer against every hold, the runs of a
// Once's function, an election's terms: "at most one leader holds a valid
// lease at any time").
func CheckExclusion(h *History) []Violation {
	var vs []Violation
	for _, hs := range byKey(h) {
		for i, a := range hs {
			for _, b := range hs[i+1:] {
				if !b.Start.Before(a.End()) {
					continue
				}
				if !a.Prim.exclusive() && !b.Prim.exclusive() {
					continue // readers share; semaphores: CheckLimit
				}
				if !overlap(a, b) {
					continue
				}
				p := PromiseExclusion
				switch {
				case a.Prim == PrimElection:
					p = PromiseLeader
				case a.Prim == PrimRead || b.Prim == PrimRead:
					p = PromiseReaders
				}
				vs = append(vs, Violation{p, fmt.Sprintf("%v and %v valid at once", a, b)})
			}
		}
	}
	return vs
}

// CheckLimit: "at any instant the units held across every process are at
// most the limit", and "the units held at once always fit one limit, the
// limit of every claim holding them" (processes that disagree on it take
// turns).
func CheckLimit(h *History) []Violation {
	var vs []Violation
	for _, hs := range byKey(h) {
		for _, a := range hs {
			if a.Prim != PrimSem {
				continue
			}
			// The units valid at a's start (those of holds that started
			// earlier and are still valid, and a's own).
			units := a.Weight
			var with []*Hold
			for _, b := range hs {
				if b == a || b.Prim != PrimSem || b.Start.After(a.Start) || !a.Start.Before(b.End()) {
					continue
				}
				if b.Start.Equal(a.Start) && b.ID > a.ID {
					continue
				}
				with = append(with, b)
				units += b.Weight
				if b.Limit != a.Limit {
					vs = append(vs, Violation{PromiseLimit, fmt.Sprintf("%v (limit %d) valid with %v (limit %d)", a, a.Limit, b, b.Limit)})
				}
			}
			if units > a.Limit {
				vs = append(vs, Violation{PromiseLimit, fmt.Sprintf("%d units valid at %v (limit %d): %v and %v", units, a.Start.Format(tf), a.Limit, a, with)})
			}
		}
	}
	return vs
}

// CheckLost: "At the deadline Lost() is closed, whether or not the
// backend can be reached; a hold is never lost silently" (an election's
// context "is cancelled at the lease's local deadline even when the
// backend cannot be reached"). A hold its holder did not give up before
// its deadline must see Lost() closed by then, give or take LostSlack.
func CheckLost(h *History) []Violation {
	var vs []Violation
	for _, x := range h.Holds {
		if x.Deadline.IsZero() {
			continue
		}
		due := x.Deadline.Add(x.LostSlack)
		if !x.Ended.IsZero() && !x.Ended.After(due) {
			continue // its holder gave it up before Lost() was due
		}
		if !x.LostAt.IsZero() && !x.LostAt.After(due) {
			continue
		}
		when := "never"
		if !x.LostAt.IsZero() {
			when = "at " + x.LostAt.Format(tf)
		}
		vs = append(vs, Violation{PromiseLost, fmt.Sprintf("%v: deadline %v, Lost() closed %s", x, x.Deadline.Format(tf), when)})
	}
	return vs
}

// CheckHeld: a successful Lock "establishes a hold": when it returns, its
// claim is in the store and its session's lease is valid.
func CheckHeld(h *History) []Violation {
	var vs []Violation
	for _, x := range h.Holds {
		switch {
		case x.Token == 0:
			vs = append(vs, Violation{PromiseHeld, fmt.Sprintf("%v: returned with token 0", x)})
		case x.Landed.IsZero() && x.Prim != PrimOnce:
			vs = append(vs, Violation{PromiseHeld, fmt.Sprintf("%v: returned with a token whose claim never landed", x)})
		case x.Landed.After(x.Start):
			vs = append(vs, Violation{PromiseHeld, fmt.Sprintf("%v: returned before its claim landed (%v)", x, x.Landed.Format(tf))})
		case !x.Deadline.IsZero() && !x.Start.Before(x.Deadline) && !x.Paused:
			vs = append(vs, Violation{PromiseHeld, fmt.Sprintf("%v: returned at or after its session's deadline %v", x, x.Deadline.Format(tf))})
		}
	}
	return vs
}
