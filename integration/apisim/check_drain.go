package apisim

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// PromiseDrain: "a member can be drained: its shards move and none comes
// back" (operator.Drain). Judged in every run: from two heartbeats of the
// slowest member after a drain's directive landed (a tick of the member's
// to read it, and one of slack) until an undrain of that member landed,
// the member begins no shard term. A fault of the member's process (a
// pause, the store cut off or hanging, a restart) keeps it from reading
// the drain or from withdrawing its waits, so a fault that overlaps those
// two heartbeats moves their start to its end. When every live member is
// drained the shards are assigned to no one and their owners keep them,
// but a drained member still begins no term, so that case needs no
// exemption here.
//
// Judged in calm runs: within drainMoveBeats heartbeats after a drain
// landed, the member owns no shard any more, when another member, not
// drained, was live throughout and the spell was free of faults, of
// changes of membership and of other drains.
const PromiseDrain = "partition-drain"

// drainMoveBeats bounds, in heartbeats of the slowest member, how long
// after a drain landed its member may still own a shard (in a calm
// spell, with another member free to take them): within one the others'
// tick reads the drain, queues for the drained member's shards and
// writes that it waits (Partition.tick heartbeats again when it queued);
// within one more the drained member's tick reads that the member each
// shard is assigned to waits and hands the shard over (Partition.apply),
// and its run's context ends then; one more is slack for a tick that
// read just before the other's write landed.
const drainMoveBeats = 3

// DrainFigures are what CheckDrain judged.
type DrainFigures struct {
	Drains, Undrains, Failed int // directives that landed, and attempts that did not
	// Moves: drains judged for their member's shards moving off
	// (calm runs); AllDrained: drains not judged so because no other
	// member, not drained, was live; MoveMax: the longest a judged
	// drained member still owned a shard after the drain landed, and
	// the most heartbeats (of its seed's slowest member) that took.
	Moves, AllDrained int
	MoveMax           time.Duration
	MoveMaxBeats      float64
}

// Add adds o to f.
func (f *DrainFigures) Add(o DrainFigures) {
	f.Drains += o.Drains
	f.Undrains += o.Undrains
	f.Failed += o.Failed
	f.Moves += o.Moves
	f.AllDrained += o.AllDrained
	f.MoveMax = max(f.MoveMax, o.MoveMax)
	f.MoveMaxBeats = max(f.MoveMaxBeats, o.MoveMaxBeats)
}

func (f DrainFigures) String() string {
	return fmt.Sprintf("%d drains and %d undrains landed (%d failed); %d drains judged for their shards moving off (at most %v, %.1f heartbeats, after), %d not: every other live member drained",
		f.Drains, f.Undrains, f.Failed, f.Moves, f.MoveMax.Round(time.Millisecond), f.MoveMaxBeats, f.AllDrained)
}

// drainRecord is a drain or undrain directive that landed.
type drainRecord struct {
	at    time.Time
	drain bool
}

// drainLog is the drain directives that landed, by member, in the order
// they landed (one operator, one directive at a time: the order of their
// Gens).
type drainLog map[string][]drainRecord

// drainsOf reads h's drain actions.
func drainsOf(h *History) (drainLog, DrainFigures) {
	var f DrainFigures
	dl := drainLog{}
	for _, a := range h.Actions {
		if a.Actor != DrainActorName {
			continue
		}
		switch a.Outcome {
		case drainLanded:
			f.Drains++
		case undrainLanded:
			f.Undrains++
		default:
			f.Failed++
			continue
		}
		dl[a.Key] = append(dl[a.Key], drainRecord{a.Return, a.Outcome == drainLanded})
	}
	for _, rs := range dl {
		slices.SortStableFunc(rs, func(a, b drainRecord) int { return a.at.Compare(b.at) })
	}
	return dl, f
}

// drainedAt reports whether member id was drained at t, by the
// directives landed by then.
func (dl drainLog) drainedAt(id string, t time.Time) bool {
	d := false
	for _, r := range dl[id] {
		if r.at.After(t) {
			break
		}
		d = r.drain
	}
	return d
}

// undrained returns the members of ids not drained at t.
func (dl drainLog) undrained(ids []string, t time.Time) []string {
	var out []string
	for _, id := range ids {
		if !dl.drainedAt(id, t) {
			out = append(out, id)
		}
	}
	return out
}

// landedWithin reports whether a directive landed in (from, to], other
// than the one of member id at at.
func (dl drainLog) landedWithin(from, to time.Time, id string, at time.Time) bool {
	for m, rs := range dl {
		for _, r := range rs {
			if m == id && r.at.Equal(at) {
				continue
			}
			if r.at.After(from) && !r.at.After(to) {
				return true
			}
		}
	}
	return false
}

// addChanges adds to a quiet window's changes (checkSettled) each
// landing of a directive, as a change of membership: it changes the
// members' weights.
func (dl drainLog) addChanges(changes *[]time.Time, what map[time.Time]string, member map[time.Time]bool) {
	for _, id := range slices.Sorted(maps.Keys(dl)) {
		for _, r := range dl[id] {
			*changes = append(*changes, r.at)
			member[r.at] = true
			what[r.at] = "undrain of " + id
			if r.drain {
				what[r.at] = "drain of " + id
			}
		}
	}
}

// afterFaults returns at+d, or, when a fault of process proc overlaps
// the spell from at to then, d after the fault's end (again and again).
func afterFaults(h *History, proc int, at time.Time, d time.Duration) time.Time {
	t := at.Add(d)
	for moved := true; moved; {
		moved = false
		for _, pf := range h.ProcFaults {
			if pf.Proc == proc && pf.From.Before(t) && pf.To.After(at) && pf.To.Add(d).After(t) {
				t, moved = pf.To.Add(d), true
			}
		}
	}
	return t
}

// checkDrains judges PromiseDrain on h (ms: the memberships; byShard: the
// terms by shard, sorted by start; hb: the slowest heartbeat; bound: how
// long after a fault or change a spell begins to be judged for
// liveness), and, when calm, the drained members' shards moving off.
func (ps *PartitionSim) checkDrains(h *History, ms []membership, byShard [][]*Term, hb, bound time.Duration, calm bool, f *DrainFigures) []Violation {
	dl, df := drainsOf(h)
	*f = df
	proc := map[string]int{}
	byMember := map[string][]*Term{}
	for _, ts := range byShard {
		for _, t := range ts {
			proc[t.Member] = t.Proc
			byMember[t.Member] = append(byMember[t.Member], t)
		}
	}
	for _, m := range ms {
		proc[m.id] = m.proc
	}
	var vs []Violation
	for _, id := range slices.Sorted(maps.Keys(dl)) {
		rs := dl[id]
		for i, r := range rs {
			if !r.drain {
				continue
			}
			until := farFuture
			for _, u := range rs[i+1:] {
				if !u.drain {
					until = u.at
					break
				}
			}
			p, known := proc[id]
			if !known {
				continue // it owned nothing, and its membership was not recorded
			}
			from := afterFaults(h, p, r.at, 2*hb)
			undrained := "never"
			if until != farFuture {
				undrained = until.Format(tf)
			}
			for _, t := range byMember[id] {
				if !t.Start.Before(from) && t.Start.Before(until) {
					vs = append(vs, Violation{PromiseDrain, fmt.Sprintf("%v began %v after its member's drain landed at %v (undrained: %s)", t, t.Start.Sub(r.at), r.at.Format(tf), undrained)})
				}
			}
			if calm {
				vs = append(vs, ps.checkMoveOff(h, dl, ms, byMember[id], id, r.at, until, hb, bound, f)...)
			}
		}
	}
	return vs
}

// checkMoveOff judges that member id, drained at at (and not undrained
// before until), owns no shard drainMoveBeats heartbeats (hb) after, if
// it stayed that long and another member, not drained, was live
// throughout, free to take its shards, and the spell saw no fault (nor
// one within bound before), no other directive land, no member join or
// leave (nor within a heartbeat before), and no member crash (nor within
// five heartbeats before).
func (ps *PartitionSim) checkMoveOff(h *History, dl drainLog, ms []membership, terms []*Term, id string, at, until time.Time, hb, bound time.Duration, f *DrainFigures) []Violation {
	move := drainMoveBeats * hb
	end := at.Add(move)
	if until.Before(end) || moveFaultNear(h, ms, at.Add(-bound), end) || dl.landedWithin(at.Add(-hb), end, id, at) {
		return nil
	}
	var others []string
	stays := false
	for _, m := range ms {
		if m.id == id {
			stays = m.gone.After(end) // else it left, its shards with it
			continue
		}
		// A member that joined or left meanwhile changes the assignment,
		// as a drain does; one that crashed counts as live until its
		// status ages out (four heartbeats), and may be given the drained
		// member's shards until then.
		if within(m.join, at.Add(-hb), end) || within(m.gone, at.Add(-hb), end) ||
			m.crashed && within(m.gone, at.Add(-5*hb), end) {
			return nil
		}
		if !m.join.After(at) && m.gone.After(end) && !dl.drainedAt(m.id, at) {
			others = append(others, m.id)
		}
	}
	if !stays {
		return nil
	}
	if len(others) == 0 {
		f.AllDrained++
		return nil
	}
	var vs []Violation
	var last time.Time
	judged := false
	for _, t := range terms {
		if t.Start.After(end) {
			continue
		}
		if ts := shardTerms(h, t.Shard); allStalledWithin(ts, others, at, end) {
			continue // no member is free to take it
		}
		judged = true
		last = maxTime(last, t.validEnd())
		if t.validEnd().After(end) {
			vs = append(vs, Violation{PromiseDrain, fmt.Sprintf("%v still owned %v after its member's drain landed at %v (members free to take it: %v)", t, move, at.Format(tf), others)})
		}
	}
	if judged || len(terms) == 0 {
		f.Moves++
		if last.After(at) && !last.After(end) {
			f.MoveMax = max(f.MoveMax, last.Sub(at))
			f.MoveMaxBeats = max(f.MoveMaxBeats, float64(last.Sub(at))/float64(hb))
		}
	}
	return vs
}

// moveFaultNear reports whether a fault that can hold a drained member's
// shards back met [from, to]: an emptying, a fault of no one process
// (sessions emptied, gates held back), or a fault of a process with a
// member in that spell that stops it from reading the members' status,
// writing its own, or queueing (a pause, the store cut off or hanging).
// A restart crashes the process's member, which checkMoveOff judges as a
// change of membership; a clock step only ends a lease early.
func moveFaultNear(h *History, ms []membership, from, to time.Time) bool {
	procs := map[int]bool{-1: true}
	for _, m := range ms {
		if !m.join.After(to) && !m.gone.Before(from) {
			procs[m.proc] = true
		}
	}
	for _, pf := range h.ProcFaults {
		if procs[pf.Proc] && pf.Kind != "restart" && pf.Kind != "step" && !pf.To.Before(from) && !pf.From.After(to) {
			return true
		}
	}
	for _, e := range h.Emptyings {
		if !e.Before(from) && !e.After(to) {
			return true
		}
	}
	return false
}

// within reports whether t is in (from, to].
func within(t, from, to time.Time) bool { return t.After(from) && !t.After(to) }

// shardTerms returns the terms of shard s in h.
func shardTerms(h *History, s int) []*Term {
	var out []*Term
	for _, t := range h.Terms {
		if t.Shard == s {
			out = append(out, t)
		}
	}
	return out
}

// allStalledWithin reports whether every member of ids had a stalled run
// of the shard whose terms are ts under way at some time in [a, b]: the
// shard was assigned to none of them meanwhile.
func allStalledWithin(ts []*Term, ids []string, a, b time.Time) bool {
	for _, id := range ids {
		if !slices.ContainsFunc(ts, func(t *Term) bool {
			return t.Member == id && t.Stalled && !t.Lost.After(b) && (t.End.IsZero() || !t.End.Before(a))
		}) {
			return false
		}
	}
	return true
}
