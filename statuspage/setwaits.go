package statuspage

import (
	"context"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// What the store says of lock sets (dsync/lockset) that wait: who waits
// for whom among the keys read (the wait-for graph that deadlock
// detection follows), and the deadlocks broken. A set's wait is read from
// its waiting claim's queue, as the detector reads it: the claim waits
// for the live holders ahead of it that it conflicts with, or for all of
// them when another claim waits ahead of it. What the set holds while it
// waits is in its wait note, which a set with a deadlock timeout records
// once it has waited that long while holding (driver.Wait). All of it is
// a report: nothing here grants or ends a claim.

// DeadlocksShown is how far back the page and dsync status show the
// deadlocks broken: a day, as long as dsyncmongo keeps their records.
const DeadlocksShown = 24 * time.Hour

// SetRecords are a store's records of lock sets' waits, read by
// Reader.SetRecords, with which WaitsOf tells the waits of a key's queue.
type SetRecords struct {
	// WaitsKept and DeadlocksKept: the store keeps lock sets' wait notes
	// (driver.Roles.Waits) and the records of deadlocks broken
	// (driver.Roles.Deadlocks). Without notes, a set's wait names whom it
	// waits for, but not what it holds; without records, no deadlock
	// broken is known (and without notes, none is detected).
	WaitsKept, DeadlocksKept bool
	// Deadlocks are the records of deadlocks broken, newest first.
	Deadlocks []Deadlock
	latest    map[string]driver.Wait // each set's note of the highest N
}

// SetRecords reads the lock sets' wait notes the store keeps, and its
// records of the deadlocks broken at or after since (store time). A
// store may delete both once they are old (dsyncmongo keeps them for a
// day).
func (r *Reader) SetRecords(ctx context.Context, since time.Time) (SetRecords, error) {
	roles, _ := reads().Roles(r.client).(driver.Roles)
	sr := SetRecords{WaitsKept: roles.Waits != nil, DeadlocksKept: roles.Deadlocks != nil}
	if sr.WaitsKept {
		ws, err := roles.Waits.ListWaits(ctx, time.Time{})
		if err != nil {
			return SetRecords{}, err
		}
		sr.latest = make(map[string]driver.Wait, len(ws))
		for _, w := range ws {
			if w.N > sr.latest[w.Set].N {
				sr.latest[w.Set] = w
			}
		}
	}
	if sr.DeadlocksKept {
		ds, err := roles.Deadlocks.ListDeadlocks(ctx, since)
		if err != nil {
			return SetRecords{}, err
		}
		for _, d := range ds {
			sr.Deadlocks = append(sr.Deadlocks, deadlockOf(d))
		}
		slices.SortFunc(sr.Deadlocks, func(a, b Deadlock) int { return b.At.Compare(a.At) }) // newest first
	}
	return sr, nil
}

// WaitsOf returns the waits of lock sets in l's queue: each waiting
// claim of a set, with the holders it waits for and, where the set's
// latest note is of that claim, what the set holds. sr may be nil (no
// notes read).
func (sr *SetRecords) WaitsOf(l LockState) []SetWait {
	var out []SetWait
	for j, w := range l.Waiting {
		if w.Set == "" {
			continue
		}
		sw := SetWait{Set: w.Set, Key: l.Key, Kind: l.Kind, Name: l.Name, Token: w.Token, Host: w.Host, PID: w.PID,
			WaitingMS: millis(w.QueuedAt, l.Now), Holds: []string{}, HeldBy: []SetHolder{}}
		// A claim waiting ahead: w waits for it, and it for every holder
		// (or a holder it lets hold first), so w waits for them all.
		all := j > 0
		for _, h := range l.Holders {
			if all || h.Mode != ModeShared || w.Mode != ModeShared {
				sw.HeldBy = append(sw.HeldBy, SetHolder{Set: h.Set, Token: h.Token, Owner: h.Owner, Host: h.Host, PID: h.PID})
			}
		}
		if sr != nil {
			if n, ok := sr.latest[w.Set]; ok && n.Key == l.Key && n.Epoch == w.Token && n.Nonce == w.Nonce {
				sw.Noted, sw.Since = true, n.Since
				for _, c := range n.Holds {
					sw.Holds = append(sw.Holds, c.Key)
				}
			}
		}
		out = append(out, sw)
	}
	return out
}

// deadlockOf is d as the schema shows it.
func deadlockOf(d driver.Deadlock) Deadlock {
	out := Deadlock{Victim: d.Victim, Host: d.Host, PID: d.PID, Session: d.Session, At: d.At, Cycle: []DeadlockEdge{}}
	for _, e := range d.Cycle {
		kind, name := KindOf(e.Key)
		out.Cycle = append(out.Cycle, DeadlockEdge{Set: e.Set, Key: e.Key, Kind: kind, Name: name, Token: e.Epoch, HeldBy: e.HeldBy, HeldToken: e.Token})
	}
	return out
}
