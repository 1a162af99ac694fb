package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Hold is one hold of a key, rebuilt from the events of one worker process
// that share its PID, the key and the token.
type Hold struct {
	Worker string
	PID    int
	Owner  string
	Key    string
	Token  uint64

	// Acquired is when Lock (or Campaign) returned; 0 when the worker
	// recorded no acquire (it died first, or the library did not count
	// the lease): such a hold is not checked.
	Acquired int64
	// Deadline is the latest local deadline recorded, from any source:
	// a hold with no end event (a killed worker) is valid until then.
	Deadline int64
	// LibDeadline and PredDeadline are the latest deadlines recorded from
	// each source (SrcLib, SrcPred), 0 if none.
	LibDeadline  int64
	PredDeadline int64
	// Ended is when the worker stopped relying on the hold (before
	// Unlock); 0 if it never said.
	Ended int64
	// Unlocked is when Unlock was called (0 if not recorded), UnlockDL the
	// library's deadline then, UnlockLost whether it returned ErrLost.
	Unlocked   int64
	UnlockDL   int64
	UnlockLost bool
	// Lost: the loss signal fired, observed at LostAt, while LostDeadline
	// was the deadline in force.
	Lost         bool
	LostAt       int64
	LostDeadline int64

	TTL    int64
	Margin int64

	// Mode, Weight and Limit: how the hold shared its key (Event.Mode).
	Mode   string
	Weight int64
	Limit  int64
}

// conflicts reports whether holds a and b may not be valid at once:
// readers may share a key, and weighted holds of one limit up to it;
// weighted holds of different limits conflict (a key's limit changed, or
// its processes disagree on it: the claims of each limit take turns).
func conflicts(a, b *Hold) bool { return a.class() != b.class() || a.Mode == "" }

// Conflicts reports whether holds a and b may not be valid at once (see
// conflicts).
func Conflicts(a, b *Hold) bool { return conflicts(a, b) }

// class is what a hold shares its key with: its mode and, for a weighted
// hold, its limit.
type class struct {
	mode  string
	limit int64
}

func (h *Hold) class() class {
	if h.Mode == ModeWeighted {
		return class{h.Mode, h.Limit}
	}
	return class{h.Mode, 0}
}

// ValidEnd is the end of the hold's validity interval: its end, or its
// deadline if that came first (or if it has no end).
func (h *Hold) ValidEnd() int64 {
	if h.Ended != 0 && h.Ended < h.Deadline {
		return h.Ended
	}
	return h.Deadline
}

func (h *Hold) String() string {
	return fmt.Sprintf("%s(pid %d) %s#%d", h.Worker, h.PID, h.Key, h.Token)
}

// Violation is a property the history breaks.
type Violation struct {
	Kind string // one of the Kind* constants
	Key  string
	Msg  string
}

func (v Violation) String() string { return v.Kind + ": " + v.Msg }

// Violation kinds.
const (
	KindOverlap     = "overlap"      // two holds of a key valid at once
	KindTokenOrder  = "token-order"  // tokens not strictly increasing in the order holds began
	KindLateLoss    = "late-loss"    // a loss signalled later than its deadline plus tolerance
	KindSilentLoss  = "silent-loss"  // a hold outlived its deadline without a loss signal
	KindLateReply   = "late-reply"   // the library's deadline went past what replies in time allow
	KindObserve     = "observe"      // an observer saw leaders out of order or a wrong owner
	KindLostUpdate  = "lost-update"  // the register lost an acknowledged increment
	KindRegister    = "register"     // the register's state contradicts the writes
	KindPhantomHold = "phantom-hold" // a hold whose events contradict each other
	KindLateUnlock  = "late-unlock"  // Unlock called after the deadline did not report the loss
	KindFIFO        = "fifo"         // a weighted hold began while claims queued before it left no room
)

// Options tune a check.
type Options struct {
	// LossTolerance is how long after its deadline a hold's loss may be
	// signalled. Default: the hold's margin (TTL/20), the part of the lease
	// the library reserves for the signal to be acted on before anyone
	// else can take over.
	LossTolerance func(h *Hold) int64
	// PredTolerance is how far the library's own deadline may exceed the
	// deadline predicted from reply times before it counts as a late
	// reply having been counted. Default 1 ms (clock conversion error).
	PredTolerance time.Duration
}

func (o *Options) lossTolerance(h *Hold) int64 {
	if o != nil && o.LossTolerance != nil {
		return o.LossTolerance(h)
	}
	return h.Margin
}

func (o *Options) predTolerance() int64 {
	if o != nil && o.PredTolerance > 0 {
		return int64(o.PredTolerance)
	}
	return int64(time.Millisecond)
}

// Report is the outcome of Check.
type Report struct {
	// Holds per key, in the order they began.
	Holds    map[string][]*Hold
	NumHolds int
	// Handoffs counts consecutive holds of a key by different processes.
	Handoffs int
	// Losses counts holds whose loss was signalled; Excused those whose
	// process was paused (SIGSTOP) or stalled between the deadline and the
	// signal, which only the time it was running counts against.
	Losses  int
	Excused int
	// MaxLossLateness is the largest time from a hold's deadline to its
	// loss signal during which the process was running (negative when
	// every loss came early, e.g. a refused renewal); MaxLossHold is that
	// hold.
	MaxLossLateness time.Duration
	MaxLossHold     *Hold
	// Faults counts fault events by kind.
	Faults map[string]int
	// Stalls counts the times a worker was not scheduled for a while
	// (EvStall), MaxStall the longest.
	Stalls       int
	MaxStall     time.Duration
	Observations int
	// Proclaims counts values leaders confirmed (EvProclaim), ValuesSeen
	// the observations of a proclaimed value (a revision above 0).
	Proclaims, ValuesSeen int
	Writes                WriteStats
	// Once counts the events of Once runs (check_once.go).
	Once       OnceStats
	Violations []Violation
}

// WriteStats counts register writes by outcome.
type WriteStats struct {
	OK, Stale, Unknown int
	// LateAccepted counts accepted writes that began after their hold's
	// validity ended (a paused writer): the register is all that stands
	// between them and a lost update.
	LateAccepted int
}

// OK reports whether the history has no violation.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

func (r *Report) add(kind, key, format string, args ...any) {
	r.Violations = append(r.Violations, Violation{Kind: kind, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// Has reports whether the report holds a violation of kind.
func (r *Report) Has(kind string) bool {
	return slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Kind == kind })
}

type holdID struct {
	pid   int
	key   string
	token uint64
	n     int // which acquire of this token by this process (tokens repeat after a reset)
}

type interval struct{ from, to int64 }

// Check rebuilds the holds of a merged history (any order) and checks:
//
//   - no two holds of a key that conflict overlap in their validity
//     intervals [Acquired, ValidEnd] (readers may share a key, and
//     weighted holds of one limit while their weights fit it; weighted
//     holds of different limits conflict);
//   - tokens strictly increase in the order holds that conflict began;
//   - weighted holds began in queue order: none while claims queued
//     before it left no room (check_fifo.go);
//   - every loss was signalled no later than its deadline plus the
//     tolerance, not counting the time the process was paused (SIGSTOP)
//     or stalled (EvStall: not scheduled at all, on an overloaded host);
//   - no hold outlived its deadline without a loss signal (same count);
//   - the library's deadline never exceeded the one predicted from
//     replies that arrived in time (a late reply was not counted);
//   - an Unlock called after the deadline reported ErrLost;
//   - observers saw leaders with strictly increasing tokens, and the
//     values of a term (Proclaim) with increasing revisions, each as its
//     leader proclaimed it, owned by the hold with that token;
//   - no run of a Once started after its done record was confirmed or
//     seen, and every record names a run that succeeded (check_once.go).
//
// Register writes are checked by CheckWrites.
func Check(events []Event, opts *Options) *Report {
	r := &Report{Holds: make(map[string][]*Hold), Faults: make(map[string]int)}
	holds := make(map[holdID]*Hold)
	pauses := make(map[int][]interval)
	// era counts the resets up to t: tokens are compared, and holds told
	// apart, within an era.
	var resets []int64
	for i := range events {
		if events[i].Ev == EvReset {
			resets = append(resets, events[i].T)
		}
	}
	slices.Sort(resets)
	era := func(t int64) int {
		n, _ := slices.BinarySearch(resets, t+1)
		return n
	}
	// After a reset a process can hold the same token again: each event
	// belongs to the last acquire of its token at or before it.
	acquires := make(map[holdID][]int64)
	for i := range events {
		if ev := &events[i]; ev.Ev == EvAcquire {
			id := holdID{ev.PID, ev.Key, ev.Token, 0}
			acquires[id] = append(acquires[id], ev.T)
		}
	}
	for _, ts := range acquires {
		slices.Sort(ts)
	}
	get := func(ev *Event) *Hold {
		id := holdID{ev.PID, ev.Key, ev.Token, 0}
		if ts := acquires[id]; len(ts) > 1 {
			n, _ := slices.BinarySearch(ts, ev.T+1)
			id.n = max(n-1, 0)
		}
		h := holds[id]
		if h == nil {
			h = &Hold{Worker: ev.Worker, PID: ev.PID, Key: ev.Key, Token: ev.Token}
			holds[id] = h
		}
		if ev.Owner != "" {
			h.Owner = ev.Owner
		}
		if ev.TTL != 0 {
			h.TTL, h.Margin = ev.TTL, ev.Margin
		}
		return h
	}
	deadline := func(h *Hold, ev *Event) {
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
	var observed []*Event
	for i := range events {
		ev := &events[i]
		switch ev.Ev {
		case EvAcquire:
			h := get(ev)
			h.Acquired = ev.T
			h.Mode, h.Weight, h.Limit = ev.Mode, ev.Weight, ev.Limit
			deadline(h, ev)
		case EvDeadline:
			deadline(get(ev), ev)
		case EvLost:
			h := get(ev)
			deadline(h, ev)
			if !h.Lost || ev.T < h.LostAt {
				h.Lost, h.LostAt, h.LostDeadline = true, ev.T, ev.DL
			}
		case EvEnd:
			h := get(ev)
			deadline(h, ev)
			h.Ended = ev.T
		case EvReleased:
			h := get(ev)
			h.Unlocked, h.UnlockDL, h.UnlockLost = ev.T, ev.DL, ev.Lost
		case EvFault:
			r.Faults[ev.Kind]++
			if ev.Kind == "sigstop" || ev.Kind == "suspend" {
				pauses[ev.PID] = append(pauses[ev.PID], interval{ev.T, ev.End})
			}
		case EvStall:
			r.Stalls++
			r.MaxStall = max(r.MaxStall, time.Duration(ev.End-ev.T))
			pauses[ev.PID] = append(pauses[ev.PID], interval{ev.T, ev.End})
		case EvObserve, EvPoll:
			observed = append(observed, ev)
		}
	}
	// stopped returns how much of [from, to] process pid spent paused or
	// stalled (intervals merged, so a SIGSTOP and the stall it causes
	// count once).
	for pid, ps := range pauses {
		slices.SortFunc(ps, func(a, b interval) int { return cmp.Compare(a.from, b.from) })
		merged := ps[:0]
		for _, p := range ps {
			if n := len(merged); n > 0 && p.from <= merged[n-1].to {
				merged[n-1].to = max(merged[n-1].to, p.to)
				continue
			}
			merged = append(merged, p)
		}
		pauses[pid] = merged
	}
	stopped := func(pid int, from, to int64) int64 {
		var d int64
		for _, p := range pauses[pid] {
			if lo, hi := max(p.from, from), min(p.to, to); lo < hi {
				d += hi - lo
			}
		}
		return d
	}

	for _, h := range holds {
		if h.Acquired == 0 {
			continue // never counted as held by its worker
		}
		r.Holds[h.Key] = append(r.Holds[h.Key], h)
		r.NumHolds++
	}
	first := true
	for key, hs := range r.Holds {
		slices.SortFunc(hs, func(a, b *Hold) int {
			return cmp.Or(cmp.Compare(a.Acquired, b.Acquired), cmp.Compare(a.Token, b.Token))
		})
		// valid: the holds whose validity had not ended when the hold
		// being looked at began. maxTok: the largest token of a hold of
		// each class begun so far in this era (tokens restart after a
		// reset of the store).
		var prev *Hold
		var valid []*Hold
		maxTok := map[class]*Hold{}
		curEra := -1
		for _, h := range hs {
			if h.Deadline == 0 {
				r.add(KindPhantomHold, key, "%v: acquired with no deadline recorded", h)
			}
			live := valid[:0]
			for _, v := range valid {
				if h.Acquired < v.ValidEnd() {
					live = append(live, v)
				}
			}
			valid = live
			weight := h.Weight
			for _, v := range valid {
				if conflicts(h, v) {
					r.add(KindOverlap, key, "%v acquired at %s while %v was valid until %s (%v overlap)",
						h, ts(h.Acquired), v, ts(v.ValidEnd()), time.Duration(v.ValidEnd()-h.Acquired))
				} else if h.Mode == ModeWeighted {
					weight += v.Weight
				}
			}
			if h.Mode == ModeWeighted && weight > h.Limit {
				r.add(KindOverlap, key, "%v acquired at %s with weight %d while holds weighing %d were valid: %d over the limit %d",
					h, ts(h.Acquired), h.Weight, weight-h.Weight, weight, h.Limit)
			}
			if e := era(h.Acquired); e != curEra {
				curEra = e
				clear(maxTok)
			}
			// Holds that conflict begin in token order: a hold's token is
			// larger than that of every conflicting hold begun before it.
			for _, p := range maxTok {
				if conflicts(h, p) && h.Token <= p.Token {
					r.add(KindTokenOrder, key, "%v began at %s after %v began at %s, with a token not larger",
						h, ts(h.Acquired), p, ts(p.Acquired))
				}
			}
			if p := maxTok[h.class()]; p == nil || h.Token > p.Token {
				maxTok[h.class()] = h
			}
			if prev != nil && h.PID != prev.PID {
				r.Handoffs++
			}
			prev = h
			valid = append(valid, h)

			tol := opts.lossTolerance(h)
			if h.Lost {
				r.Losses++
				// Lateness counts only the time the process was running:
				// while stopped it could not signal anything.
				off := stopped(h.PID, h.LostDeadline, h.LostAt)
				late := h.LostAt - h.LostDeadline - off
				if off > 0 {
					r.Excused++
				}
				switch {
				case h.LostDeadline == 0:
					r.add(KindPhantomHold, key, "%v: loss recorded without the deadline in force", h)
				default:
					if first || late > int64(r.MaxLossLateness) {
						r.MaxLossLateness, r.MaxLossHold, first = time.Duration(late), h, false
					}
					if late > tol {
						r.add(KindLateLoss, key, "%v: loss signalled at %s, %v after its deadline %s (%v of it running; tolerance %v)",
							h, ts(h.LostAt), time.Duration(h.LostAt-h.LostDeadline), ts(h.LostDeadline), time.Duration(late), time.Duration(tol))
					}
				}
			} else if h.Ended != 0 {
				dl := h.LibDeadline
				if dl == 0 {
					dl = h.Deadline
				}
				if h.Ended-stopped(h.PID, dl, h.Ended) > dl+tol {
					r.add(KindSilentLoss, key, "%v: still relied on at %s, %v after its deadline %s, with no loss signal",
						h, ts(h.Ended), time.Duration(h.Ended-dl), ts(dl))
				}
			}
			if h.Unlocked != 0 && h.UnlockDL != 0 && h.Unlocked > h.UnlockDL && !h.UnlockLost {
				r.add(KindLateUnlock, key, "%v: Unlock called at %s, %v after the deadline %s, reported success instead of ErrLost",
					h, ts(h.Unlocked), time.Duration(h.Unlocked-h.UnlockDL), ts(h.UnlockDL))
			}
			if h.LibDeadline != 0 && h.PredDeadline != 0 && h.LibDeadline > h.PredDeadline+opts.predTolerance() {
				r.add(KindLateReply, key, "%v: the library's deadline %s is %v past the latest deadline replies in time allow (%s)",
					h, ts(h.LibDeadline), time.Duration(h.LibDeadline-h.PredDeadline), ts(h.PredDeadline))
			}
		}
	}
	if first {
		r.MaxLossLateness = 0
	}
	for key, hs := range r.Holds {
		checkFIFO(r, key, hs, era)
	}

	// Observers: per process, tokens strictly increase, and so do the
	// revisions of a term's values; each observed leader is the owner of
	// the hold with that token, and each value the one its leader
	// proclaimed at that revision (within an era).
	type eraToken struct {
		era   int
		token uint64
	}
	byToken := make(map[string]map[eraToken]*Hold)
	for key, hs := range r.Holds {
		m := make(map[eraToken]*Hold, len(hs))
		for _, h := range hs {
			m[eraToken{era(h.Acquired), h.Token}] = h
		}
		byToken[key] = m
	}
	slices.SortStableFunc(observed, func(a, b *Event) int { return cmp.Compare(a.T, b.T) })
	type observer struct {
		pid      int
		key, how string
	}
	type seen struct {
		era   int
		token uint64
		rev   uint64
		adv   string
	}
	// What each term's leader proclaimed, by revision.
	type termRev struct {
		era        int
		key        string
		token, rev uint64
	}
	proclaimed := make(map[termRev]string)
	for i := range events {
		if ev := &events[i]; ev.Ev == EvProclaim {
			proclaimed[termRev{era(ev.T), ev.Key, ev.Token, ev.Rev}] = ev.Adv
			r.Proclaims++
		}
	}
	last := make(map[observer]seen)
	for _, ev := range observed {
		r.Observations++
		if ev.Rev > 0 {
			r.ValuesSeen++
		}
		id := observer{ev.PID, ev.Key, ev.Ev}
		e := era(ev.T)
		// Observe reports each new leader, and each newer value of its
		// term, once: (token, revision) strictly increase. Polls may see
		// the same value again: never decreasing, except to the status
		// Leader reports when it cannot read the leader's member status
		// (Value "" and Rev 0: Close deletes the status once the term's
		// lock is given up, and a release that was not confirmed leaves
		// the lock looking live until its session expires).
		prev, ok := last[id]
		unread := ev.Ev == EvPoll && ev.Rev == 0 && ev.Adv == ""
		back := ok && prev.era == e && (ev.Token < prev.token || ev.Token == prev.token && ev.Rev < prev.rev && !unread)
		again := ok && prev.era == e && ev.Token == prev.token && ev.Rev == prev.rev
		switch {
		case back:
			r.add(KindObserve, ev.Key, "%s(pid %d) %s token %d revision %d at %s after token %d revision %d",
				ev.Worker, ev.PID, ev.Ev, ev.Token, ev.Rev, ts(ev.T), prev.token, prev.rev)
		case again && ev.Ev == EvObserve:
			r.add(KindObserve, ev.Key, "%s(pid %d) observe reported token %d revision %d again at %s",
				ev.Worker, ev.PID, ev.Token, ev.Rev, ts(ev.T))
		case again && ev.Adv != prev.adv:
			r.add(KindObserve, ev.Key, "%s(pid %d) %s token %d revision %d with value %q at %s, %q before",
				ev.Worker, ev.PID, ev.Ev, ev.Token, ev.Rev, ev.Adv, ts(ev.T), prev.adv)
		}
		if !ok || prev.era != e || ev.Token > prev.token || ev.Token == prev.token && ev.Rev > prev.rev {
			last[id] = seen{era: e, token: ev.Token, rev: ev.Rev, adv: ev.Adv}
		}
		if adv, ok := proclaimed[termRev{e, ev.Key, ev.Token, ev.Rev}]; ok && ev.Rev > 0 && adv != ev.Adv {
			r.add(KindObserve, ev.Key, "%s(pid %d) %s token %d revision %d with value %q, proclaimed as %q",
				ev.Worker, ev.PID, ev.Ev, ev.Token, ev.Rev, ev.Adv, adv)
		}
		if h := byToken[ev.Key][eraToken{e, ev.Token}]; h != nil && h.Owner != "" && ev.Owner != "" && h.Owner != ev.Owner {
			r.add(KindObserve, ev.Key, "%s(pid %d) observed token %d owned by %s, but %v has owner %s",
				ev.Worker, ev.PID, ev.Token, ev.Owner, h, h.Owner)
		}
	}
	checkOnce(r, events, era)
	slices.SortFunc(r.Violations, func(a, b Violation) int { return cmp.Compare(a.Kind+a.Msg, b.Kind+b.Msg) })
	return r
}

// RegisterState is the final state of the register protected by a key.
type RegisterState struct {
	Key   string
	Final int64
	// Applied holds the ids of the writes the register applied, when it
	// can tell (the fenced register keeps every version); nil otherwise.
	Applied map[string]bool
}

// CheckWrites checks the writes recorded for st.Key against the
// register's final state, and adds what it finds to r: every
// acknowledged increment must be in the final value, and no other
// (zero lost updates), and acknowledged writes must have distinct values.
// Writes whose outcome is unknown (an error, or a worker killed
// mid-write) may or may not count.
func CheckWrites(r *Report, events []Event, st RegisterState) {
	type write struct {
		ev    *Event
		start *Event
	}
	writes := make(map[string]*write)
	var order []string
	for i := range events {
		ev := &events[i]
		if ev.Key != st.Key || (ev.Ev != EvWriteStart && ev.Ev != EvWrite) {
			continue
		}
		w := writes[ev.WID]
		if w == nil {
			w = &write{}
			writes[ev.WID] = w
			order = append(order, ev.WID)
		}
		if ev.Ev == EvWrite {
			w.ev = ev
		} else {
			w.start = ev
		}
	}
	holds := make(map[holdID]*Hold)
	for _, h := range r.Holds[st.Key] {
		holds[holdID{h.PID, h.Key, h.Token, 0}] = h
	}
	var ok, unknown int64
	values := make(map[int64]string)
	for _, wid := range order {
		w := writes[wid]
		out := OutUnknown
		if w.ev != nil {
			out = w.ev.Outcome
		}
		switch out {
		case OutOK:
			ok++
			r.Writes.OK++
			if other, dup := values[w.ev.Value]; dup {
				r.add(KindLostUpdate, st.Key, "value %d acknowledged twice (writes %s and %s): an increment was lost", w.ev.Value, other, wid)
			}
			values[w.ev.Value] = wid
			if w.start != nil {
				if h := holds[holdID{w.ev.PID, w.ev.Key, w.ev.Token, 0}]; h != nil && w.start.T > h.ValidEnd() {
					r.Writes.LateAccepted++
				}
			}
			if st.Applied != nil && !st.Applied[wid] {
				r.add(KindRegister, st.Key, "write %s (value %d) was acknowledged but is not in the register", wid, w.ev.Value)
			}
		case OutStale:
			r.Writes.Stale++
			if st.Applied[wid] {
				r.add(KindRegister, st.Key, "write %s was rejected as stale but is in the register", wid)
			}
		default:
			unknown++
			r.Writes.Unknown++
		}
	}
	for wid := range st.Applied {
		if writes[wid] == nil {
			r.add(KindRegister, st.Key, "the register applied write %s, which no worker recorded starting", wid)
		}
	}
	switch {
	case st.Final < ok:
		r.add(KindLostUpdate, st.Key, "final value %d, but %d increments were acknowledged: %d lost", st.Final, ok, ok-st.Final)
	case st.Final > ok+unknown:
		r.add(KindRegister, st.Key, "final value %d exceeds the %d acknowledged and %d unknown increments", st.Final, ok, unknown)
	}
	slices.SortFunc(r.Violations, func(a, b Violation) int { return cmp.Compare(a.Kind+a.Msg, b.Kind+b.Msg) })
}

// ts formats a CLOCK_MONOTONIC time for messages.
func ts(t int64) string { return fmt.Sprintf("%.6fs", float64(t)/1e9) }
