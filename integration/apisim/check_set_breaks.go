package apisim

import (
	"fmt"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// breakSeen is a deadlock a Set broke, as a record that landed or a
// LockMore's *DeadlockError says: every wait of the cycle, the victim's
// first, and by when the victim had decided (the record landed, or
// LockMore returned).
type breakSeen struct {
	victim string
	by     time.Time
	edges  []driver.DeadlockEdge // Epoch 0: not said (an error's)
	source string
}

// breaksSeen are the run's deadlocks broken: the records that landed,
// and the *DeadlockErrors of the victims without one.
func breaksSeen(h *History) []breakSeen {
	var out []breakSeen
	recorded := make(map[string]bool)
	for _, b := range h.Breaks {
		recorded[b.Record.Victim] = true
		out = append(out, breakSeen{victim: b.Record.Victim, by: b.At, edges: b.Record.Cycle, source: fmt.Sprintf("p%d's record", b.Proc)})
	}
	for _, r := range h.SetRuns {
		for _, c := range r.Calls {
			if c.Deadlock == nil || len(c.Deadlock.Cycle) == 0 || recorded[c.Deadlock.Cycle[0].Set] {
				continue
			}
			b := breakSeen{victim: c.Deadlock.Cycle[0].Set, by: c.Return, source: fmt.Sprintf("p%d's *DeadlockError", r.Proc)}
			for _, e := range c.Deadlock.Cycle {
				b.edges = append(b.edges, driver.DeadlockEdge{Set: e.Set, Key: e.Key, HeldBy: e.HeldBy, Token: e.Token})
			}
			out = append(out, b)
		}
	}
	return out
}

// checkBreaks: "A Set is broken only as the victim of a cycle of waits
// that existed whole at one instant" (No false positive), and the victim
// is "the Set of the greatest (Since, identity) among the cycle's notes:
// the youngest". The cycle is judged by the claims that landed, not by
// the library's reads: each edge's waiting claim of its Set and the
// claim of the token it names of the next edge's Set, ahead of it at its
// key, were all in the store, unended, at one instant before the break.
// The youngest is judged by the notes that landed (their Since).
func checkBreaks(h *History) []Violation {
	var vs []Violation
	for _, b := range breaksSeen(h) {
		if what, ok := wasCycle(h, b); !ok {
			vs = append(vs, Violation{PromiseSetCycle, fmt.Sprintf("%s: %s broke %v by %v: %s", b.source, b.victim, b.edges, b.by.Format(tf), what)})
			continue
		}
		if y, ok := youngest(h, b.edges); ok && y != b.victim {
			vs = append(vs, Violation{PromiseSetVictim, fmt.Sprintf("%s: %s broke %v by %v; the youngest by the notes is %s", b.source, b.victim, b.edges, b.by.Format(tf), y)})
		}
	}
	return vs
}

// wasCycle reports whether b's edges close a cycle of waits that the
// claims showed at one instant before b.by, or says why not.
func wasCycle(h *History, b breakSeen) (string, bool) {
	if len(b.edges) == 0 || b.edges[0].Set != b.victim {
		return "not a cycle through the victim", false
	}
	for i, e := range b.edges {
		if next := b.edges[(i+1)%len(b.edges)].Set; e.HeldBy != next {
			return fmt.Sprintf("edge %d's holder %s is not the next edge's Set %s", i, e.HeldBy, next), false
		}
	}
	// Where the lives of the claims overlap, one of them began.
	var on []*ClaimLife
	for _, c := range h.Lives {
		if !c.Landed.After(b.by) && onEdges(c, b.edges) {
			on = append(on, c)
		}
	}
	for _, c := range on {
		if slices.IndexFunc(b.edges, func(e driver.DeadlockEdge) bool { return !waitedAt(on, e, c.Landed) }) < 0 {
			return "", true
		}
	}
	return "no instant before the break had every wait in the store", false
}

// onEdges reports whether c is a claim an edge of edges names: the
// waiting claim of its Set, or its holder.
func onEdges(c *ClaimLife, edges []driver.DeadlockEdge) bool {
	for _, e := range edges {
		if c.Key == e.Key && (c.Waiter == e.Set || c.Waiter == e.HeldBy && c.Epoch == e.Token) {
			return true
		}
	}
	return false
}

// waitedAt reports whether, at t, e's Set had a claim of e's key (of
// e.Epoch, if said) in the store, behind the claim of token e.Token of
// e.HeldBy, both unended, among lives.
func waitedAt(lives []*ClaimLife, e driver.DeadlockEdge, t time.Time) bool {
	held := slices.ContainsFunc(lives, func(c *ClaimLife) bool {
		return c.Key == e.Key && c.Waiter == e.HeldBy && c.Epoch == e.Token && c.liveAt(t)
	})
	return held && slices.ContainsFunc(lives, func(c *ClaimLife) bool {
		return c.Key == e.Key && c.Waiter == e.Set && (e.Epoch == 0 || c.Epoch == e.Epoch) && c.Epoch > e.Token && c.liveAt(t)
	})
}

// youngest is the Set of edges of the greatest (Since, identity), by
// their notes that landed; false if a Set's note did not land.
func youngest(h *History, edges []driver.DeadlockEdge) (string, bool) {
	var y *driver.Wait
	for _, e := range edges {
		i := slices.IndexFunc(h.Notes, func(n NoteRec) bool { return n.Note.Set == e.Set })
		if i < 0 {
			return "", false
		}
		n := &h.Notes[i].Note
		if y == nil || n.Since.After(y.Since) || n.Since.Equal(y.Since) && n.Set > y.Set {
			y = n
		}
	}
	if y == nil {
		return "", false
	}
	return y.Set, true
}
