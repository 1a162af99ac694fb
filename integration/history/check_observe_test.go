package history

import "testing"

// Observers see the values of a term (Proclaim) in revision order, each
// as its leader proclaimed it.
func TestCheckValues(t *testing.T) {
	leaders := concat(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), hold("b", 2, 2, 600*ms, 1550*ms, 900*ms, 0),
		[]Event{
			{Ev: EvProclaim, Worker: "a", PID: 1, Key: "k", Token: 1, Rev: 1, Adv: "a1", T: 100 * ms},
			{Ev: EvProclaim, Worker: "a", PID: 1, Key: "k", Token: 1, Rev: 2, Adv: "a2", T: 200 * ms},
		})
	obs := func(ev string, tok, rev uint64, adv string, at int64) Event {
		return Event{Ev: ev, Worker: "o", PID: 9, Key: "k", Token: tok, Rev: rev, Adv: adv, T: at}
	}
	for _, tc := range []struct {
		name string
		evs  []Event
		want bool // a violation
	}{{
		name: "values in order, then the next term",
		evs: []Event{obs(EvObserve, 1, 0, "", 50*ms), obs(EvObserve, 1, 1, "a1", 150*ms),
			obs(EvObserve, 1, 2, "a2", 250*ms), obs(EvObserve, 2, 0, "", 700*ms)},
	}, {
		name: "polls see a value again",
		evs:  []Event{obs(EvPoll, 1, 2, "a2", 250*ms), obs(EvPoll, 1, 2, "a2", 300*ms)},
	}, {
		name: "a value of the term goes back",
		evs:  []Event{obs(EvObserve, 1, 2, "a2", 250*ms), obs(EvObserve, 1, 1, "a1", 300*ms)},
		want: true,
	}, {
		name: "a poll goes back a revision",
		evs:  []Event{obs(EvPoll, 1, 2, "a2", 250*ms), obs(EvPoll, 1, 1, "a1", 300*ms)},
		want: true,
	}, {
		// Leader reports Value "" and Rev 0 when the leader's member status
		// cannot be read: after Close deleted it while the term's lock,
		// whose release was not confirmed, still looks live.
		name: "a poll finds the term's status unreadable",
		evs:  []Event{obs(EvPoll, 1, 2, "a2", 250*ms), obs(EvPoll, 1, 0, "", 300*ms), obs(EvPoll, 1, 2, "a2", 350*ms)},
	}, {
		name: "a poll goes back to the term's first value",
		evs:  []Event{obs(EvPoll, 1, 2, "a2", 250*ms), obs(EvPoll, 1, 0, "a0", 300*ms)},
		want: true,
	}, {
		name: "observe reports a value twice",
		evs:  []Event{obs(EvObserve, 1, 1, "a1", 150*ms), obs(EvObserve, 1, 1, "a1", 250*ms)},
		want: true,
	}, {
		name: "a value other than the one proclaimed",
		evs:  []Event{obs(EvPoll, 1, 1, "a2", 150*ms)},
		want: true,
	}, {
		name: "one revision with two values",
		evs:  []Event{obs(EvPoll, 2, 1, "x", 700*ms), obs(EvPoll, 2, 1, "y", 800*ms)},
		want: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(concat(leaders, tc.evs), nil)
			if got := r.Has(KindObserve); got != tc.want {
				t.Fatalf("observe violation %v, want %v: %v", got, tc.want, r.Violations)
			}
			if len(r.Violations) > 0 && !tc.want {
				t.Fatalf("violations: %v", r.Violations)
			}
		})
	}
}
