package apisim

import (
	"fmt"
	"slices"
	"time"
)

// CheckOnce checks Do's return value against the runs of f that happened
// (within an era: an emptying takes the done records away, and the next
// Do runs f again, as docs/operations.md says):
//   - "Of the runs of f that succeed, at most one makes its Do return
//     nil: the one whose record's insert was answered while its hold was
//     valid". So a Do that ran f and returned nil had a reply carrying its
//     record before its hold's deadline;
//   - "Once a record is confirmed ... no run of f starts again": no run
//     starts after the run of a Do that returned nil;
//   - "It returns nil once f has succeeded (here or elsewhere)": a Do
//     that returns nil without running f returns after a run succeeded.
func CheckOnce(h *History) []Violation {
	var vs []Violation
	winners := make(map[onceEra][]*Do)
	for _, d := range h.Dos {
		if d.Err != nil {
			continue
		}
		if d.won() {
			k := onceEra{d.Key, h.era(d.Run.Start)}
			winners[k] = append(winners[k], d)
		}
		if v, broken := judgeNilDo(h, d); broken {
			vs = append(vs, v)
		}
	}
	for k, ws := range winners {
		vs = append(vs, judgeWinners(h, k, ws)...)
	}
	return vs
}

// onceEra is a Once's key in an era of the store (History.era).
type onceEra struct {
	key string
	era int
}

// era is the number of emptyings at or before t: the runs of one era of
// a key see the same done record, if any.
func (h *History) era(t time.Time) int {
	n := 0
	for _, e := range h.Emptyings {
		if !e.After(t) {
			n++
		}
	}
	return n
}

// won reports whether d ran f, f succeeded, and d returned nil.
func (d *Do) won() bool { return d.Err == nil && d.Run != nil && d.Run.OK }

// judgeNilDo judges d, a Do that returned nil: if it ran f, its run
// succeeded and a reply carried its record before its hold's deadline;
// if not, a run of f had succeeded by its return.
func judgeNilDo(h *History, d *Do) (Violation, bool) {
	switch {
	case d.won():
		if !slices.ContainsFunc(d.Confirmed, func(c time.Time) bool { return c.Before(d.Deadline) }) {
			return Violation{PromiseOnce, fmt.Sprintf("p%d Do(%s) returned nil at %v, but no reply carried its record (token %d) before its hold's deadline %v (replies: %v)",
				d.Proc, d.Key, d.Return.Format(tf), d.Run.Token, d.Deadline.Format(tf), fmtTimes(d.Confirmed))}, true
		}
	case d.Run != nil:
		return Violation{PromiseOnce, fmt.Sprintf("p%d Do(%s) returned nil, but its run failed", d.Proc, d.Key)}, true
	case !h.succeededBy(d.Key, d.Return):
		return Violation{PromiseOnce, fmt.Sprintf("p%d Do(%s) returned nil at %v without running f, and no run of f had succeeded", d.Proc, d.Key, d.Return.Format(tf))}, true
	}
	return Violation{}, false
}

// succeededBy reports whether a run of key's f had succeeded by t, in any
// era: a record sent before an emptying may land after it.
func (h *History) succeededBy(key string, t time.Time) bool {
	return slices.ContainsFunc(h.Runs, func(r *Run) bool { return r.Key == key && r.OK && !r.End.After(t) })
}

// judgeWinners judges the Dos that ran f and returned nil in one era of
// a key: at most one, and no run of f (that could be valid) started
// after its run in that era.
func judgeWinners(h *History, k onceEra, ws []*Do) []Violation {
	var vs []Violation
	if len(ws) > 1 {
		vs = append(vs, Violation{PromiseOnce, fmt.Sprintf("%d Dos of %s ran f and returned nil (tokens %d and %d)", len(ws), k.key, ws[0].Run.Token, ws[1].Run.Token)})
	}
	for _, w := range ws {
		for _, r := range h.Runs {
			if r.Key == k.key && r != w.Run && r.valid() && r.Start.After(w.Run.Start) && h.era(r.Start) == k.era {
				vs = append(vs, Violation{PromiseOnce, fmt.Sprintf("p%d ran f of %s (token %d) at %v, after p%d's run (token %d, from %v), whose Do returned nil",
					r.Proc, k.key, r.Token, r.Start.Format(tf), w.Proc, w.Run.Token, w.Run.Start.Format(tf))})
			}
		}
	}
	return vs
}

// fmtTimes formats ts as the fake clock's times.
func fmtTimes(ts []time.Time) []string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.Format(tf)
	}
	return s
}
