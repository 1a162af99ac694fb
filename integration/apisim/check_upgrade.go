package apisim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// The promises of the version rule and the priorities (leader's
// documentation, "Steering") that CheckUpgrade judges on the rolling
// upgrade (upgrade.go). The terms' own promises (one leader at a time,
// tokens, Lost() on time) are the usual checkers'.
const (
	// PromiseVersion: "a candidate whose claim comes to hold reads the
	// members once more before its term begins and, if a newer member is
	// live, releases the lease at once and begins no term", under every
	// fault: no term begins while a candidate of a newer version is live
	// as that read sees it. Live is judged by what landed: a status write
	// of the newer candidate within the member max age of the term's
	// candidate (three of its heartbeats) before the term began, less
	// one heartbeat of slack, and no removal since.
	PromiseVersion = "version"
	// PromiseUpgradeSteps: in calm runs, "leadership changes at most
	// once per step" of an upgrade in surge order; a stop-first step
	// changes it twice at most.
	PromiseUpgradeSteps = "upgrade-steps"
	// PromiseUpgradeEnd: in calm runs, an upgrade of every slot "ends on
	// the new version".
	PromiseUpgradeEnd = "upgrade-end"
	// PromisePriority: in calm runs, the highest live candidate leads
	// within one handoff plus the delay plus two heartbeat intervals of
	// its start, and of any other change (UpgradeRun.bound).
	PromisePriority = "priority"
)

// UpgradeFigures are what CheckUpgrade judged.
type UpgradeFigures struct {
	Runs, CalmRuns, StopFirst int
	Terms                     int // terms of the upgraded election
	// Steps: steps done; StepsJudged: those judged for the changes of
	// leadership (calm, no fault near); Ends: completed upgrades judged
	// for their last leader.
	Steps, StepsJudged, Ends int
	// Windows: quiet spells judged for the priorities; Settled: the
	// longest from a window's start until the last term of a candidate
	// below the best ended (against the bound); Gap: the longest spell
	// without a leader in a window, from the bound on (against a
	// handoff).
	Windows      int
	Settled, Gap time.Duration
}

// Add adds o to f.
func (f *UpgradeFigures) Add(o UpgradeFigures) {
	f.Runs += o.Runs
	f.CalmRuns += o.CalmRuns
	f.StopFirst += o.StopFirst
	f.Terms += o.Terms
	f.Steps += o.Steps
	f.StepsJudged += o.StepsJudged
	f.Ends += o.Ends
	f.Windows += o.Windows
	f.Settled = max(f.Settled, o.Settled)
	f.Gap = max(f.Gap, o.Gap)
}

func (f UpgradeFigures) String() string {
	return fmt.Sprintf("%d rolling upgrades (%d calm, %d stop-first): %d terms, %d steps (%d judged for changes of leadership), %d upgrades judged for their last leader, %d quiet windows judged for priorities (the best led %v after a change at most, gaps of %v at most)",
		f.Runs, f.CalmRuns, f.StopFirst, f.Terms, f.Steps, f.StepsJudged, f.Ends, f.Windows, f.Settled, f.Gap)
}

// CheckUpgrade judges the rolling upgrade of h, if it had one.
func CheckUpgrade(h *History) []Violation {
	vs, _ := CheckUpgradeFigures(h)
	return vs
}

// CheckUpgradeFigures judges the rolling upgrade of h, if it had one,
// and says what it judged.
func CheckUpgradeFigures(h *History) ([]Violation, UpgradeFigures) {
	var f UpgradeFigures
	u := h.Upgrade
	if u == nil {
		return nil, f
	}
	f.Runs = 1
	if u.Calm {
		f.CalmRuns = 1
	}
	if u.StopFirst {
		f.StopFirst = 1
	}
	byID := map[string]*Candidate{}
	for _, c := range u.Candidates {
		byID[c.ID] = c
	}
	key := storedElection(upgradeElection)
	var terms []*Hold
	for _, x := range h.Holds {
		if x.Key == key && x.Start.Before(x.End()) {
			terms = append(terms, x)
		}
	}
	slices.SortStableFunc(terms, func(a, b *Hold) int { return a.Start.Compare(b.Start) })
	f.Terms = len(terms)
	var vs []Violation
	for _, t := range terms {
		c := byID[t.Who]
		for _, n := range u.Candidates {
			if n.Version <= c.Version {
				continue
			}
			if at, ok := u.liveAt(n.ID, t.Start, 2*c.HB); ok {
				vs = append(vs, Violation{PromiseVersion, fmt.Sprintf("%v of %v began while %v was live (its status landed at %v)", t, c, n, at.Format(tf))})
			}
		}
	}
	for _, s := range u.Steps {
		if !s.Done.IsZero() {
			f.Steps++
		}
	}
	if !u.Calm {
		return vs, f
	}
	// The faults that can touch the upgrade: its hosts', every
	// process's (sessions emptied), and the emptyings.
	h = u.onHosts(h)
	settle := u.settle()
	for _, s := range u.Steps {
		if s.Done.IsZero() || faultNear(h, s.Start.Add(-settle), s.End) {
			continue
		}
		f.StepsJudged++
		var in []*Hold
		for _, t := range terms {
			if !t.Start.Before(s.Start) && t.Start.Before(s.End) {
				in = append(in, t)
			}
		}
		if most := 1 + boolInt(u.StopFirst); len(in) > most {
			vs = append(vs, Violation{PromiseUpgradeSteps, fmt.Sprintf("the step of slot %d [%v, %v) (%v to %v) began %d terms, more than %d: %v", s.Slot, s.Start.Format(tf), s.End.Format(tf), s.Old, s.New, len(in), most, in)})
		}
	}
	if len(u.Steps) == upgradeSlots && !u.Steps[upgradeSlots-1].Done.IsZero() && !faultNear(h, u.End.Add(-settle), u.End) {
		f.Ends++
		at := u.End.Add(-time.Millisecond)
		newest := slices.MaxFunc(u.Candidates, func(a, b *Candidate) int { return cmp.Compare(a.Version, b.Version) }).Version
		if t := heldAt(terms, at); t == nil {
			vs = append(vs, Violation{PromiseUpgradeEnd, fmt.Sprintf("nobody led at %v, at the end of the upgrade", at.Format(tf))})
		} else if c := byID[t.Who]; c.Version != newest {
			vs = append(vs, Violation{PromiseUpgradeEnd, fmt.Sprintf("%v of %v led at %v, at the end of the upgrade to v%d", t, c, at.Format(tf), newest)})
		}
	}
	vs = append(vs, u.checkPriority(h, terms, byID, &f)...)
	return vs, f
}

// checkPriority judges the quiet windows: spells between two changes (a
// candidate started or closed, a fault of a process, an emptying) with no
// fault or emptying within settle before. From bound after a window's
// start to its end, every term must be of a candidate of the highest
// rank (version, then priority) among those live, and the election must
// have no leader for no longer than a handoff.
func (u *UpgradeRun) checkPriority(h *History, terms []*Hold, byID map[string]*Candidate, f *UpgradeFigures) []Violation {
	bound, settle := u.bound(), u.settle()
	var changes []time.Time
	for _, c := range u.Candidates {
		changes = append(changes, c.Start)
		if !c.Closed.IsZero() {
			changes = append(changes, c.Closed)
		}
	}
	for _, pf := range h.ProcFaults {
		changes = append(changes, pf.From, pf.To)
	}
	changes = append(changes, h.Emptyings...)
	slices.SortFunc(changes, time.Time.Compare)
	changes = slices.Compact(changes)
	var vs []Violation
	for i := 0; i+1 < len(changes); i++ {
		a, b := changes[i], changes[i+1]
		if b.Sub(a) <= bound || faultNear(h, a.Add(-settle), b) || u.joinedTogether(a) {
			continue
		}
		var best *Candidate
		for _, c := range u.Candidates {
			if !c.Start.After(a) && (c.Closed.IsZero() || !c.Closed.Before(b)) && (best == nil || rankOf(c) > rankOf(best)) {
				best = c
			}
		}
		if best == nil {
			continue
		}
		f.Windows++
		from := a.Add(bound)
		for _, t := range terms {
			if !t.Start.Before(b) || !t.End().After(a) {
				continue
			}
			c := byID[t.Who]
			if rankOf(c) < rankOf(best) {
				end := t.End()
				if end.After(b) {
					end = b
				}
				f.Settled = max(f.Settled, end.Sub(a))
			}
			if !t.End().After(from) {
				continue
			}
			if rankOf(c) < rankOf(best) {
				vs = append(vs, Violation{PromisePriority, fmt.Sprintf("%v of %v led in [%v, %v), from %v after the change at %v, while %v was live", t, c, from.Format(tf), b.Format(tf), bound, a.Format(tf), best)})
			}
		}
		at, gap := holdGap(terms, from, b)
		f.Gap = max(f.Gap, gap)
		if gap > upgradeHandoff {
			vs = append(vs, Violation{PromisePriority, fmt.Sprintf("nobody led for %v from %v, %v after the change at %v, while %v was live", gap, at.Format(tf), at.Sub(a), a.Format(tf), best)})
		}
	}
	return vs
}

// onHosts returns h with only the faults of the processes that host the
// candidates, and those of every process.
func (u *UpgradeRun) onHosts(h *History) *History {
	c := *h
	c.ProcFaults = slices.DeleteFunc(slices.Clone(h.ProcFaults), func(pf ProcFault) bool {
		return pf.Proc >= 0 && !slices.Contains(u.Hosts, pf.Proc)
	})
	return &c
}

// rankOf orders candidates as the version rule does: version, then
// priority.
func rankOf(c *Candidate) int { return c.Version<<16 + c.Priority }

// liveAt reports whether member id was live at t as a reader with
// maximum age age saw it: its last status write that landed before t
// landed at most age before t (when: then), and no removal landed since.
// Writes and removals at t itself may have landed after the read, and
// are not counted for it.
func (u *UpgradeRun) liveAt(id string, t time.Time, age time.Duration) (when time.Time, live bool) {
	for _, s := range u.Statuses {
		switch {
		case s.Member != id:
		case s.Delete && !s.At.After(t):
			when = time.Time{}
		case !s.Delete && s.At.Before(t):
			when = s.At
		}
	}
	return when, !when.IsZero() && t.Sub(when) <= age
}

// heldAt returns the term valid at t, or nil.
func heldAt(terms []*Hold, t time.Time) *Hold {
	for _, x := range terms {
		if !x.Start.After(t) && x.End().After(t) {
			return x
		}
	}
	return nil
}

// holdGap returns the longest spell of [from, to) that no term of terms
// (sorted by Start) covers while valid, and where it begins.
func holdGap(terms []*Hold, from, to time.Time) (at time.Time, gap time.Duration) {
	return uncovered(terms, func(x *Hold) (time.Time, time.Time) { return x.Start, x.End() }, from, to)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bound is how long after a change the highest live candidate leads, in
// a run free of faults: one handoff, the preemption delay and two
// heartbeats. leader.WithPreemption promises one handoff past the later
// of the delay's end and a heartbeat after the candidate queued (its unit
// tests and leadermongo's TestPreemptionDelay check that); this is looser
// by a heartbeat, for the round trips before a claim and of the steps
// aside, and for the churn of five candidates that join within a
// heartbeat, where a step aside that comes after the leader's transfer
// began costs that transfer a poll.
func (r *UpgradeRun) bound() time.Duration { return upgradeHandoff + r.Delay + 2*r.MaxHB }

// joinedTogether reports whether two candidates started within a
// heartbeat of each other up to at: the bound is promised for candidates
// that join a heartbeat or more apart (leader.WithPreemption), since a
// handover to one can make the other step aside before the leader sees
// that it is better.
func (u *UpgradeRun) joinedTogether(at time.Time) bool {
	var starts []time.Time
	for _, c := range u.Candidates {
		if !c.Start.After(at) && at.Sub(c.Start) < u.settle() {
			starts = append(starts, c.Start)
		}
	}
	slices.SortFunc(starts, time.Time.Compare)
	for i := 1; i < len(starts); i++ {
		if starts[i].Sub(starts[i-1]) < u.MaxHB {
			return true
		}
	}
	return false
}

// settle is how long before a judged spell (a step, the upgrade's end, a
// quiet window) no fault may fall: after one the election first
// recovers (a term lost at its deadline, candidates whose sessions were
// emptied learning it and claiming again), within a TTL, and then the
// bound applies. A seed showed it: sessions emptied 1.9 s before the
// end, the term lost at its deadline 0.2 s later, and nobody led at the
// end, 1.6 s on (the bound, 1.45 s there, had kept that emptying out of
// the judged spell only when longer than 1.9 s).
func (r *UpgradeRun) settle() time.Duration { return r.MaxTTL + r.bound() }

// upgradeHandoff is one handoff in the simulation: a leader's Transfer
// polls the lease's queue every leader.DefaultPollInterval until its
// candidate is next, and the candidate's Lock then learns of the release
// within its Client's poll interval.
const upgradeHandoff = leader.DefaultPollInterval + 2*pollInterval
