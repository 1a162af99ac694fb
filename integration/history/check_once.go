package history

import (
	"cmp"
	"slices"
)

// Events of a Once (dsync.Once.Do), each with the key and a token.
const (
	// EvOnceRun: a run of the function is about to start under the hold
	// with Token; T is when the read that found no done record under that
	// hold was sent.
	EvOnceRun = "once-run"
	// EvOnceOK: the run under Token returned nil, at T (recorded before
	// its done record is sent).
	EvOnceOK = "once-ok"
	// EvOnceDone: at T the done record was confirmed in the store; Token
	// is the token the record names (another run's, if an earlier run's
	// record landed first), DL when it expires (0: never), in the time
	// of T.
	EvOnceDone = "once-done"
	// EvOnceSkip: a read that replied at T found the done record, naming
	// Token and expiring at DL: the function is not run.
	EvOnceSkip = "once-skip"
)

// Violation kinds of a Once.
const (
	KindOnceTwice  = "once-twice"  // a run started after the done record was confirmed
	KindOnceRecord = "once-record" // a done record names a run that did not succeed
)

// OnceStats counts what the Once events of a history show.
type OnceStats struct {
	Runs, OK, Done, Skips int
	// Reruns counts runs that started after a run of their key had
	// succeeded (in the same era): its record was not confirmed in its
	// hold, as a loss, a crash or an unknown outcome allows.
	Reruns int
}

// checkOnce checks the Once events of a history: no run starts after its
// key's done record was confirmed or seen (within an era: a store emptied
// or restored may lose it) and before that record expired (a record with
// an expiry is forgotten after it: a run then is the next of the key),
// and every record names a run that returned nil.
func checkOnce(r *Report, events []Event, era eras) {
	c := onceCheck{
		r:         r,
		ok:        make(map[keyTok]bool),
		seen:      make(map[keyEra]*Event),
		succeeded: make(map[keyEra]bool),
	}
	var evs []*Event
	for i := range events {
		ev := &events[i]
		switch ev.Ev {
		case EvOnceOK:
			c.ok[keyTok{ev.Key, ev.Token}] = true
			r.Once.OK++
			evs = append(evs, ev)
		case EvOnceRun, EvOnceDone, EvOnceSkip:
			evs = append(evs, ev)
		}
	}
	// At equal times a run comes first: its read was sent no later than
	// the confirmation replied, and may have been applied before it.
	slices.SortStableFunc(evs, func(a, b *Event) int {
		return cmp.Or(cmp.Compare(a.T, b.T), cmp.Compare(runsFirst(b), runsFirst(a)))
	})
	for _, ev := range evs {
		ke := keyEra{ev.Key, era.of(ev.T)}
		switch ev.Ev {
		case EvOnceRun:
			c.run(ev, ke)
		case EvOnceOK:
			c.succeeded[ke] = true
		case EvOnceDone, EvOnceSkip:
			c.record(ev, ke)
		}
	}
}

// keyTok names a run of a Once: its key and the token of its hold.
type keyTok struct {
	key string
	tok uint64
}

// keyEra names a key within an era.
type keyEra struct {
	key string
	era int
}

// onceCheck is what checkOnce keeps while it goes through the Once events
// in time order.
type onceCheck struct {
	r         *Report
	ok        map[keyTok]bool   // the runs that returned nil, at any time
	seen      map[keyEra]*Event // the first confirmation or sighting of a record
	succeeded map[keyEra]bool   // a run returned nil
}

// run checks a run that started: after no done record of its key that
// was confirmed or seen and had not expired.
func (c *onceCheck) run(ev *Event, ke keyEra) {
	c.r.Once.Runs++
	if d := c.seen[ke]; d != nil && d.DL != 0 && ev.T >= d.DL {
		delete(c.seen, ke) // forgotten: the record expired
		delete(c.succeeded, ke)
	}
	if c.succeeded[ke] {
		c.r.Once.Reruns++
	}
	if d := c.seen[ke]; d != nil {
		c.r.add(KindOnceTwice, ev.Key, "%s(pid %d) began a run under token %d at %s, after the done record (token %d) was %s at %s by %s(pid %d)",
			ev.Worker, ev.PID, ev.Token, ts(ev.T), d.Token, map[bool]string{true: "confirmed", false: "seen"}[d.Ev == EvOnceDone], ts(d.T), d.Worker, d.PID)
	}
}

// record checks a done record that was confirmed or read: it names a run
// that returned nil.
func (c *onceCheck) record(ev *Event, ke keyEra) {
	if ev.Ev == EvOnceDone {
		c.r.Once.Done++
	} else {
		c.r.Once.Skips++
	}
	if c.seen[ke] == nil {
		c.seen[ke] = ev
	}
	if !c.ok[keyTok{ev.Key, ev.Token}] {
		c.r.add(KindOnceRecord, ev.Key, "%s(pid %d) %s a done record naming token %d, whose run never returned nil",
			ev.Worker, ev.PID, map[bool]string{true: "confirmed", false: "read"}[ev.Ev == EvOnceDone], ev.Token)
	}
}

// runsFirst is 1 for a run, 0 for the others: compared the other way
// round, runs sort first.
func runsFirst(ev *Event) int {
	if ev.Ev == EvOnceRun {
		return 1
	}
	return 0
}
