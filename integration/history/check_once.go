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
func checkOnce(r *Report, events []Event, era func(int64) int) {
	type keyTok struct {
		key string
		tok uint64
	}
	ok := make(map[keyTok]bool)
	var evs []*Event
	for i := range events {
		ev := &events[i]
		switch ev.Ev {
		case EvOnceOK:
			ok[keyTok{ev.Key, ev.Token}] = true
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
	type keyEra struct {
		key string
		era int
	}
	seen := make(map[keyEra]*Event)    // the first confirmation or sighting of a record
	succeeded := make(map[keyEra]bool) // a run returned nil
	for _, ev := range evs {
		ke := keyEra{ev.Key, era(ev.T)}
		switch ev.Ev {
		case EvOnceRun:
			r.Once.Runs++
			if d := seen[ke]; d != nil && d.DL != 0 && ev.T >= d.DL {
				delete(seen, ke) // forgotten: the record expired
				delete(succeeded, ke)
			}
			if succeeded[ke] {
				r.Once.Reruns++
			}
			if d := seen[ke]; d != nil {
				r.add(KindOnceTwice, ev.Key, "%s(pid %d) began a run under token %d at %s, after the done record (token %d) was %s at %s by %s(pid %d)",
					ev.Worker, ev.PID, ev.Token, ts(ev.T), d.Token, map[bool]string{true: "confirmed", false: "seen"}[d.Ev == EvOnceDone], ts(d.T), d.Worker, d.PID)
			}
		case EvOnceOK:
			succeeded[ke] = true
		case EvOnceDone, EvOnceSkip:
			if ev.Ev == EvOnceDone {
				r.Once.Done++
			} else {
				r.Once.Skips++
			}
			if seen[ke] == nil {
				seen[ke] = ev
			}
			if !ok[keyTok{ev.Key, ev.Token}] {
				r.add(KindOnceRecord, ev.Key, "%s(pid %d) %s a done record naming token %d, whose run never returned nil",
					ev.Worker, ev.PID, map[bool]string{true: "confirmed", false: "read"}[ev.Ev == EvOnceDone], ev.Token)
			}
		}
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
