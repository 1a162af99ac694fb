package history

import (
	"cmp"
	"slices"
	"time"
)

// interval is a span of CLOCK_MONOTONIC time, from its start to its end.
type interval struct{ from, to int64 }

// pauses holds, per process, the intervals it spent paused (SIGSTOP, a
// suspended container) or stalled (EvStall: not scheduled at all, on an
// overloaded host), merged so that a SIGSTOP and the stall it causes
// count once. A process cannot signal anything while stopped, so the
// loss checks do not count that time against it.
type pauses map[int][]interval

// collectPauses gathers the pauses and stalls of a history, and counts
// its faults and stalls in r.
func collectPauses(r *Report, events []Event) pauses {
	ps := make(pauses)
	for i := range events {
		ev := &events[i]
		switch ev.Ev {
		case EvFault:
			r.Faults[ev.Kind]++
			if ev.Kind == "sigstop" || ev.Kind == "suspend" {
				ps[ev.PID] = append(ps[ev.PID], interval{ev.T, ev.End})
			}
		case EvStall:
			r.Stalls++
			r.MaxStall = max(r.MaxStall, time.Duration(ev.End-ev.T))
			ps[ev.PID] = append(ps[ev.PID], interval{ev.T, ev.End})
		}
	}
	for pid, is := range ps {
		ps[pid] = merge(is)
	}
	return ps
}

// merge sorts is and joins the intervals that overlap or touch, in place.
func merge(is []interval) []interval {
	slices.SortFunc(is, func(a, b interval) int { return cmp.Compare(a.from, b.from) })
	merged := is[:0]
	for _, p := range is {
		if n := len(merged); n > 0 && p.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, p.to)
			continue
		}
		merged = append(merged, p)
	}
	return merged
}

// stopped returns how much of [from, to] process pid spent paused or
// stalled.
func (ps pauses) stopped(pid int, from, to int64) int64 {
	var d int64
	for _, p := range ps[pid] {
		if lo, hi := max(p.from, from), min(p.to, to); lo < hi {
			d += hi - lo
		}
	}
	return d
}
