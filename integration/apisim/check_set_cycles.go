package apisim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The cycles of waits between lock sets, as the claims that landed show
// them (set_claims.go), over time. At an instant, a Set takes part while
// one of its calls (Lock, TryLock, LockMore) is under way, and X waits
// for Z when a claim of X at a key is behind an unended claim of Z there
// (lockset's doc.go: "X waits for Y when X's waiting claim has an unended
// conflicting claim of Y ahead of it in a key's queue"; every member is a
// Mutex, so every claim conflicts), but for a claim whose hold its
// process lost: a Set whose member is lost while it waits leaves that
// claim to run out and starts again (its claims after it stand behind
// it, as everyone's), so the lost claim is nobody's wait and nobody's
// hold. A cycle lasts from the instant its last wait landed to the first
// at which one of its claims ended or was lost, or one of its Sets'
// calls returned.

// setCycle is one cycle of waits between Sets, over its life.
type setCycle struct {
	ids      []string // the Sets' identities, the least first, in the cycle's order
	from, to time.Time
	calls    []*SetCall // the calls under way at from, one per Set
	runs     []*SetRun
}

// orderSlack is how long a cycle between Sets that all wait in a Lock
// (or a TryLock) may last in a calm spell: none is a deadlock, yet the
// claims can show one for the round trips of a try and of the releases
// that follow it (a try that met a busy member withdraws its claim, and
// the Set then releases the members after it, which a Set waiting in
// order at one of them may be behind meanwhile). A try may take up to
// the try timeout on a slow store, or behind a claim whose session a
// fault left unjudged; calm spells have neither.
const orderSlack = 200 * time.Millisecond

// boundSlack is what the bound of a deadlock adds to 2·D in a calm
// spell: the store time of the last note and of the victim's check's
// reads, and its withdrawal's landing.
const boundSlack = 500 * time.Millisecond

// CheckSetCycles judges the cycles of waits between lock sets:
//
//   - (order) "No deadlock among Sets and single lockers": a cycle whose
//     Sets all wait in a Lock or a TryLock, none in a LockMore, lasts no
//     longer than orderSlack;
//   - (bound) "Bound and liveness": a cycle whose Sets all detect
//     deadlocks (D the greatest of their timeouts) is broken within 2·D
//     and boundSlack of its closing (each Set notes its wait D after it
//     began, and the victim checks every D). Not judged: a cycle that
//     shares a Set with another under way ("Cycles that share Sets are
//     broken one a round").
//
// Both are judged in calm runs only, in spells free of the faults of the
// cycle's processes, of emptyings and of the sessions emptied, from two
// of their longest TTL before the cycle closed to its end: a pause or a
// cut lets a session expire, whose claims the library no longer counts
// while they stay in the store, and holds a note, a check's reads or a
// withdrawal back for as long as it lasts (the doc's bound counts the
// store time of those requests), and a revoke or a held-back request,
// which calm runs have none of, likewise.
func CheckSetCycles(h *History) []Violation {
	vs, _, _ := judgeSetCycles(h)
	return vs
}

// judgeSetCycles is CheckSetCycles; seen counts the cycles, judged
// those it judged.
func judgeSetCycles(h *History) (vs []Violation, seen, judged int) {
	cycles := setCycles(h)
	seen = len(cycles)
	for i, c := range cycles {
		if !h.Calm || setCycleFaulted(h, c) {
			continue
		}
		judged++
		allLock, allDetect, maxD := true, true, time.Duration(0)
		for j, call := range c.calls {
			allLock = allLock && call.Op != "more"
			allDetect = allDetect && c.runs[j].D > 0
			maxD = max(maxD, c.runs[j].D)
		}
		took := c.to.Sub(c.from)
		switch {
		case allLock && took > orderSlack:
			vs = append(vs, Violation{PromiseSetOrder, fmt.Sprintf("%s: a cycle of Locks for %v", c, took)})
		case allDetect && took > 2*maxD+boundSlack && !sharesSet(cycles, i):
			vs = append(vs, Violation{PromiseSetBound, fmt.Sprintf("%s: broken after %v (D %v)", c, took, maxD)})
		}
	}
	return vs, seen, judged
}

func (c setCycle) String() string {
	var b strings.Builder
	for i, id := range c.ids {
		fmt.Fprintf(&b, "p%d %s %s %s (D %v) -> ", c.runs[i].Proc, c.runs[i].Who, id, c.calls[i].Op, c.runs[i].D)
	}
	fmt.Fprintf(&b, "[%v, %v)", c.from.Format(tf), c.to.Format(tf))
	return b.String()
}

// sharesSet reports whether cycles[i] shares a Set with another cycle
// during its life.
func sharesSet(cycles []setCycle, i int) bool {
	c := cycles[i]
	for j, d := range cycles {
		if j != i && d.from.Before(c.to) && c.from.Before(d.to) && slices.ContainsFunc(d.ids, func(id string) bool { return slices.Contains(c.ids, id) }) {
			return true
		}
	}
	return false
}

// setCycleFaulted reports whether c's spell, from two of its processes'
// longest TTL before it closed to its end, met a fault of one of its
// processes, the sessions emptied, an emptying or an outage of the store.
func setCycleFaulted(h *History, c setCycle) bool {
	procs := make(map[int]bool)
	var ttl time.Duration
	for _, r := range c.runs {
		procs[r.Proc] = true
		ttl = max(ttl, h.TTLs[r.Proc])
	}
	from := c.from.Add(-2 * ttl)
	for _, f := range h.ProcFaults {
		if (procs[f.Proc] || f.Proc < 0) && !f.From.After(c.to) && !f.To.Before(from) {
			return true
		}
	}
	for _, o := range h.Outages {
		if !o.From.After(c.to) && !o.To.Before(from) {
			return true
		}
	}
	return h.emptiedBetween(from, c.to)
}

// setCycles are the cycles of waits between Sets over the run, each over
// its life (the package comment above).
func setCycles(h *History) []setCycle {
	s := newCycleSweep(h)
	for _, t := range s.times {
		s.at(t, false)
	}
	s.at(farFuture, true)
	return s.done
}

// cycleSweep walks the run's instants at which a Set claim landed or
// ended or a Set call began or returned, and keeps the cycles under way.
type cycleSweep struct {
	times []time.Time
	lives []*ClaimLife // by landing
	calls []setCallOf  // by call
	next  int          // lives[next:] have not landed yet
	nextC int          // calls[nextC:] have not begun yet
	live  []*ClaimLife
	busy  []setCallOf
	open  map[string]*setCycle
	done  []setCycle
}

// setCallOf is a Set's call and the Set's run.
type setCallOf struct {
	run  *SetRun
	call *SetCall
}

func newCycleSweep(h *History) *cycleSweep {
	s := &cycleSweep{lives: slices.Clone(h.Lives), open: make(map[string]*setCycle)}
	slices.SortStableFunc(s.lives, func(a, b *ClaimLife) int { return a.Landed.Compare(b.Landed) })
	for _, c := range s.lives {
		s.times = append(s.times, c.Landed)
		for _, t := range []time.Time{c.Ended, c.Lost} {
			if !t.IsZero() {
				s.times = append(s.times, t)
			}
		}
	}
	for _, r := range h.SetRuns {
		for _, c := range r.Calls {
			if r.ID != "" && !c.Return.IsZero() {
				s.calls = append(s.calls, setCallOf{r, c})
				s.times = append(s.times, c.Call, c.Return)
			}
		}
	}
	slices.SortStableFunc(s.calls, func(a, b setCallOf) int { return a.call.Call.Compare(b.call.Call) })
	sort.Slice(s.times, func(i, j int) bool { return s.times[i].Before(s.times[j]) })
	s.times = slices.CompactFunc(s.times, time.Time.Equal)
	return s
}

// at moves the sweep to t: the claims and calls under way at t, and the
// cycles they make; a cycle gone ends at t, a new one begins. At the
// last, every cycle ends.
func (s *cycleSweep) at(t time.Time, last bool) {
	for ; s.next < len(s.lives) && !s.lives[s.next].Landed.After(t); s.next++ {
		s.live = append(s.live, s.lives[s.next])
	}
	s.live = slices.DeleteFunc(s.live, func(c *ClaimLife) bool { return !c.setsAt(t) })
	for ; s.nextC < len(s.calls) && !s.calls[s.nextC].call.Call.After(t); s.nextC++ {
		s.busy = append(s.busy, s.calls[s.nextC])
	}
	s.busy = slices.DeleteFunc(s.busy, func(c setCallOf) bool { return !t.Before(c.call.Return) })
	now := make(map[string]bool)
	if !last {
		for _, ids := range simpleCycles(s.waits()) {
			k := strings.Join(ids, ">")
			now[k] = true
			if s.open[k] == nil {
				s.open[k] = s.begin(ids, t)
			}
		}
	}
	for k, c := range s.open {
		if !now[k] {
			c.to = t
			s.done = append(s.done, *c)
			delete(s.open, k)
		}
	}
}

// begin is the cycle of ids closed at t.
func (s *cycleSweep) begin(ids []string, t time.Time) *setCycle {
	c := &setCycle{ids: ids, from: t}
	for _, id := range ids {
		for _, b := range s.busy {
			if b.run.ID == id {
				c.calls, c.runs = append(c.calls, b.call), append(c.runs, b.run)
				break
			}
		}
	}
	return c
}

// waits is who waits for whom now: X for Z when a claim of X is behind
// one of Z at a key, both Sets with a call under way.
func (s *cycleSweep) waits() map[string][]string {
	busy := make(map[string]bool)
	for _, b := range s.busy {
		busy[b.run.ID] = true
	}
	g := make(map[string][]string)
	for _, c := range s.live {
		for _, d := range s.live {
			if c.Key == d.Key && d.Epoch < c.Epoch && c.Waiter != d.Waiter && busy[c.Waiter] && busy[d.Waiter] && !slices.Contains(g[c.Waiter], d.Waiter) {
				g[c.Waiter] = append(g[c.Waiter], d.Waiter)
			}
		}
	}
	return g
}

// maxSetCycle is the most Sets a cycle simpleCycles lists has: more than
// the simulation's workers ever make.
const maxSetCycle = 8

// simpleCycles lists the simple cycles of g, each from its least node.
func simpleCycles(g map[string][]string) [][]string {
	var out [][]string
	var walk func(path []string)
	walk = func(path []string) {
		for _, z := range g[path[len(path)-1]] {
			switch {
			case z == path[0]:
				out = append(out, slices.Clone(path))
			case z > path[0] && !slices.Contains(path, z) && len(path) < maxSetCycle:
				walk(append(path, z))
			}
		}
	}
	for _, x := range slices.Sorted(maps.Keys(g)) {
		walk([]string{x})
	}
	return out
}
