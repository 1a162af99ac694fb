package history

import (
	"cmp"
	"slices"
)

// This file rebuilds the holds a history describes: each hold from the
// events of one process that share its key and token, told apart from a
// later hold of the same token after a reset of the store.

// eras tells the store's resets apart: tokens are compared, and holds told
// apart, within an era. It holds the times of the resets, sorted.
type eras []int64

func newEras(events []Event) eras {
	var resets eras
	for i := range events {
		if events[i].Ev == EvReset {
			resets = append(resets, events[i].T)
		}
	}
	slices.Sort(resets)
	return resets
}

// of is the era of time t: the number of resets at or before t.
func (e eras) of(t int64) int {
	n, _ := slices.BinarySearch(e, t+1)
	return n
}

// holdID names a hold among the events.
type holdID struct {
	pid   int
	key   string
	token uint64
	n     int // which acquire of this token by this process (tokens repeat after a reset)
}

// holdTable gathers the events of each hold into its Hold.
type holdTable struct {
	holds map[holdID]*Hold
	// acquires holds the sorted times of the acquires of each (pid, key,
	// token), n 0: after a reset a process can hold the same token again,
	// and each event belongs to the last acquire of its token at or
	// before it.
	acquires map[holdID][]int64
}

func newHoldTable(events []Event) *holdTable {
	t := &holdTable{holds: make(map[holdID]*Hold), acquires: make(map[holdID][]int64)}
	for i := range events {
		if ev := &events[i]; ev.Ev == EvAcquire {
			id := holdID{ev.PID, ev.Key, ev.Token, 0}
			t.acquires[id] = append(t.acquires[id], ev.T)
		}
	}
	for _, ts := range t.acquires {
		slices.Sort(ts)
	}
	return t
}

// rebuildHolds returns every hold the events of a history mention, keyed
// by its holdID; a hold whose acquire was not recorded has Acquired 0.
func rebuildHolds(events []Event) map[holdID]*Hold {
	t := newHoldTable(events)
	for i := range events {
		t.apply(&events[i])
	}
	return t.holds
}

// apply records what ev says of its hold; events that describe no hold
// are left alone.
func (t *holdTable) apply(ev *Event) {
	switch ev.Ev {
	case EvAcquire:
		h := t.get(ev)
		h.Acquired = ev.T
		h.Mode, h.Weight, h.Limit = ev.Mode, ev.Weight, ev.Limit
		h.noteDeadline(ev)
	case EvDeadline:
		t.get(ev).noteDeadline(ev)
	case EvLost:
		h := t.get(ev)
		h.noteDeadline(ev)
		if !h.Lost || ev.T < h.LostAt {
			h.Lost, h.LostAt, h.LostDeadline = true, ev.T, ev.DL
		}
	case EvEnd:
		h := t.get(ev)
		h.noteDeadline(ev)
		h.Ended = ev.T
	case EvReleased:
		h := t.get(ev)
		h.Unlocked, h.UnlockDL, h.UnlockLost = ev.T, ev.DL, ev.Lost
	}
}

// get returns the hold ev belongs to, made on first sight, with the owner
// and lease parameters ev carries.
func (t *holdTable) get(ev *Event) *Hold {
	id := holdID{ev.PID, ev.Key, ev.Token, 0}
	if ts := t.acquires[id]; len(ts) > 1 {
		n, _ := slices.BinarySearch(ts, ev.T+1)
		id.n = max(n-1, 0)
	}
	h := t.holds[id]
	if h == nil {
		h = &Hold{Worker: ev.Worker, PID: ev.PID, Key: ev.Key, Token: ev.Token}
		t.holds[id] = h
	}
	if ev.Owner != "" {
		h.Owner = ev.Owner
	}
	if ev.TTL != 0 {
		h.TTL, h.Margin = ev.TTL, ev.Margin
	}
	return h
}

// noteDeadline records the deadline ev carries, if any: the latest of
// all, and the latest of its source.
func (h *Hold) noteDeadline(ev *Event) {
	if ev.DL == 0 {
		return
	}
	h.Deadline = max(h.Deadline, ev.DL)
	switch ev.Src {
	case SrcLib:
		h.LibDeadline = max(h.LibDeadline, ev.DL)
	case SrcPred:
		h.PredDeadline = max(h.PredDeadline, ev.DL)
	}
}

// collectHolds puts the holds whose worker counted them as held (an
// acquire was recorded) in r.Holds, each key's in the order they began.
func (r *Report) collectHolds(holds map[holdID]*Hold) {
	for _, h := range holds {
		if h.Acquired == 0 {
			continue // never counted as held by its worker
		}
		r.Holds[h.Key] = append(r.Holds[h.Key], h)
		r.NumHolds++
	}
	for _, hs := range r.Holds {
		slices.SortFunc(hs, func(a, b *Hold) int {
			return cmp.Or(cmp.Compare(a.Acquired, b.Acquired), cmp.Compare(a.Token, b.Token))
		})
	}
}
