package history

import "testing"

// once returns the events of one Once run under tok: its read at run, and
// (if ok) its success and confirmed record at done.
func once(w string, pid int, tok uint64, run int64, ok bool, done int64) []Event {
	evs := []Event{{Ev: EvOnceRun, Worker: w, PID: pid, Key: "o", Token: tok, T: run}}
	if ok {
		evs = append(evs, Event{Ev: EvOnceOK, Worker: w, PID: pid, Key: "o", Token: tok, T: run + 10*ms})
	}
	if done != 0 {
		evs = append(evs, Event{Ev: EvOnceDone, Worker: w, PID: pid, Key: "o", Token: tok, T: done})
	}
	return evs
}

// expiring gives the confirmed records among evs the expiry dl.
func expiring(evs []Event, dl int64) []Event {
	for i := range evs {
		if evs[i].Ev == EvOnceDone {
			evs[i].DL = dl
		}
	}
	return evs
}

func skip(w string, pid int, tok uint64, at int64) []Event {
	return []Event{{Ev: EvOnceSkip, Worker: w, PID: pid, Key: "o", Token: tok, T: at}}
}

// A Once runs again only until a record is confirmed; a record names a
// run that succeeded; a reset of the store may lose the record.
func TestCheckOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		evs    []Event
		want   string
		reruns int
	}{{
		name: "a failed run, then one that succeeds; the others skip",
		evs:  concat(once("a", 1, 1, 1*ms, false, 0), once("b", 2, 2, 100*ms, true, 200*ms), skip("c", 3, 2, 150*ms), skip("a", 1, 2, 300*ms)),
	}, {
		name:   "a success whose record was not confirmed runs again",
		evs:    concat(once("a", 1, 1, 1*ms, true, 0), once("b", 2, 2, 100*ms, true, 200*ms)),
		reruns: 1,
	}, {
		name:   "a run after the record was confirmed",
		evs:    concat(once("a", 1, 1, 1*ms, true, 50*ms), once("b", 2, 2, 100*ms, true, 0)),
		want:   KindOnceTwice,
		reruns: 1,
	}, {
		name:   "a run after the record was seen",
		evs:    concat(once("a", 1, 1, 1*ms, true, 0), skip("c", 3, 1, 60*ms), once("b", 2, 2, 100*ms, true, 0)),
		want:   KindOnceTwice,
		reruns: 1,
	}, {
		name: "a record naming a run that failed",
		evs:  concat(once("a", 1, 1, 1*ms, false, 0), skip("c", 3, 1, 60*ms)),
		want: KindOnceRecord,
	}, {
		name: "a run after the record expired is the next of the key",
		evs:  concat(expiring(once("a", 1, 1, 1*ms, true, 50*ms), 80*ms), once("b", 2, 2, 100*ms, true, 150*ms)),
	}, {
		name:   "a run after the record was confirmed, before it expired",
		evs:    concat(expiring(once("a", 1, 1, 1*ms, true, 50*ms), 120*ms), once("b", 2, 2, 100*ms, true, 0)),
		want:   KindOnceTwice,
		reruns: 1,
	}, {
		name: "a run after a reset of the store",
		evs: concat(once("a", 1, 1, 1*ms, true, 50*ms), []Event{{Ev: EvReset, Kind: "empty", T: 80 * ms}},
			once("b", 2, 1, 100*ms, true, 200*ms)),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.evs, nil)
			switch {
			case tc.want == "" && !r.OK():
				t.Fatalf("violations: %v", r.Violations)
			case tc.want != "" && (r.OK() || r.Violations[0].Kind != tc.want):
				t.Fatalf("violations %v, want %s", r.Violations, tc.want)
			}
			if r.Once.Reruns != tc.reruns {
				t.Fatalf("reruns %d, want %d", r.Once.Reruns, tc.reruns)
			}
		})
	}
}
