package history

import (
	"testing"
	"time"
)

const (
	ms     = int64(time.Millisecond)
	ttl    = 1000 * ms
	margin = ttl / 20
)

// hold returns the events of one hold: acquired at acq, deadline dl, ended
// at end (0: never ended), lost at lost (0: not lost).
func hold(w string, pid int, tok uint64, acq, dl, end, lost int64) []Event {
	evs := []Event{{Ev: EvAcquire, Worker: w, PID: pid, Owner: w, Key: "k", Token: tok, T: acq, DL: dl, Src: SrcLib, TTL: ttl, Margin: margin}}
	if lost != 0 {
		evs = append(evs, Event{Ev: EvLost, Worker: w, PID: pid, Key: "k", Token: tok, T: lost, DL: dl, Src: SrcLib})
	}
	if end != 0 {
		evs = append(evs, Event{Ev: EvEnd, Worker: w, PID: pid, Key: "k", Token: tok, T: end, DL: dl, Src: SrcLib, Lost: lost != 0})
	}
	return evs
}

func concat(parts ...[]Event) []Event {
	var all []Event
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

func TestCheckAcceptsAGoodHistory(t *testing.T) {
	evs := concat(
		hold("a", 1, 1, 0*ms+1, 950*ms, 400*ms, 0),          // released early
		hold("b", 2, 2, 401*ms, 1351*ms, 0, 0),              // killed: valid until its deadline
		hold("c", 3, 3, 1400*ms, 2350*ms, 2360*ms, 2352*ms), // lost 2 ms late
		hold("a", 1, 4, 3400*ms, 4350*ms, 3500*ms, 0),
		[]Event{{Ev: EvFault, Kind: "sigkill", PID: 2, T: 500 * ms}},
	)
	r := Check(evs, nil)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if r.NumHolds != 4 || r.Handoffs != 3 || r.Losses != 1 || r.Faults["sigkill"] != 1 {
		t.Errorf("holds %d handoffs %d losses %d faults %v", r.NumHolds, r.Handoffs, r.Losses, r.Faults)
	}
	if r.MaxLossLateness != 2*time.Millisecond {
		t.Errorf("max loss lateness %v, want 2ms", r.MaxLossLateness)
	}
}

// The negative controls: deliberately broken histories must be rejected.
func TestCheckRejectsBrokenHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []Event
		want string
	}{{
		name: "overlap with a released hold",
		evs:  concat(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), hold("b", 2, 2, 499*ms, 1449*ms, 900*ms, 0)),
		want: KindOverlap,
	}, {
		name: "takeover before a killed holder's deadline",
		evs:  concat(hold("a", 1, 1, 1*ms, 950*ms, 0, 0), hold("b", 2, 2, 940*ms, 1890*ms, 1000*ms, 0)),
		want: KindOverlap,
	}, {
		name: "overlap with a hold that is not the previous one",
		evs: concat(hold("a", 1, 1, 1*ms, 2000*ms, 0, 0), hold("b", 2, 2, 2100*ms, 3000*ms, 2200*ms, 0),
			[]Event{{Ev: EvDeadline, PID: 1, Key: "k", Token: 1, DL: 2500 * ms, Src: SrcPred}}),
		want: KindOverlap,
	}, {
		name: "token going backwards",
		evs:  concat(hold("a", 1, 5, 1*ms, 950*ms, 100*ms, 0), hold("b", 2, 4, 200*ms, 1150*ms, 300*ms, 0)),
		want: KindTokenOrder,
	}, {
		name: "token repeated",
		evs:  concat(hold("a", 1, 5, 1*ms, 950*ms, 100*ms, 0), hold("b", 2, 5, 200*ms, 1150*ms, 300*ms, 0)),
		want: KindTokenOrder,
	}, {
		name: "loss signalled late",
		evs:  hold("a", 1, 1, 1*ms, 950*ms, 1100*ms, 1001*ms), // 51 ms > margin 50 ms
		want: KindLateLoss,
	}, {
		name: "hold outlives its deadline silently",
		evs:  hold("a", 1, 1, 1*ms, 950*ms, 1200*ms, 0),
		want: KindSilentLoss,
	}, {
		name: "late reply counted",
		evs: concat(hold("a", 1, 1, 1*ms, 1300*ms, 1250*ms, 0),
			[]Event{{Ev: EvDeadline, PID: 1, Key: "k", Token: 1, DL: 950 * ms, Src: SrcPred}}),
		want: KindLateReply,
	}, {
		name: "unlock after the deadline reports success",
		evs: concat(hold("a", 1, 1, 1*ms, 950*ms, 900*ms, 0),
			[]Event{{Ev: EvReleased, PID: 1, Key: "k", Token: 1, T: 1500 * ms, DL: 950 * ms}}),
		want: KindLateUnlock,
	}, {
		name: "poll sees tokens go backwards",
		evs: concat(hold("a", 1, 1, 1*ms, 950*ms, 100*ms, 0), hold("b", 2, 2, 200*ms, 1150*ms, 300*ms, 0),
			[]Event{
				{Ev: EvPoll, Worker: "o", PID: 9, Key: "k", Token: 2, Owner: "b", T: 250 * ms},
				{Ev: EvPoll, Worker: "o", PID: 9, Key: "k", Token: 2, Owner: "b", T: 255 * ms},
				{Ev: EvPoll, Worker: "o", PID: 9, Key: "k", Token: 1, Owner: "a", T: 260 * ms},
			}),
		want: KindObserve,
	}, {
		name: "observer sees tokens go backwards",
		evs: concat(hold("a", 1, 1, 1*ms, 950*ms, 100*ms, 0), hold("b", 2, 2, 200*ms, 1150*ms, 300*ms, 0),
			[]Event{
				{Ev: EvObserve, Worker: "o", PID: 9, Key: "k", Token: 2, Owner: "b", T: 250 * ms},
				{Ev: EvObserve, Worker: "o", PID: 9, Key: "k", Token: 1, Owner: "a", T: 260 * ms},
			}),
		want: KindObserve,
	}, {
		name: "observer sees the wrong owner",
		evs: concat(hold("a", 1, 1, 1*ms, 950*ms, 100*ms, 0),
			[]Event{{Ev: EvObserve, Worker: "o", PID: 9, Key: "k", Token: 1, Owner: "b", T: 50 * ms}}),
		want: KindObserve,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.evs, nil)
			if !r.Has(tc.want) {
				t.Fatalf("checker missed a %s violation; got %v", tc.want, r.Violations)
			}
		})
	}
}

func TestCheckExcusesPausedProcesses(t *testing.T) {
	evs := concat(
		hold("a", 1, 1, 1*ms, 950*ms, 3000*ms, 2990*ms),
		hold("b", 2, 2, 1100*ms, 2050*ms, 1200*ms, 0),
		[]Event{{Ev: EvFault, Kind: "sigstop", PID: 1, T: 500 * ms, End: 2980 * ms}},
	)
	r := Check(evs, nil)
	if !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
	if r.Excused != 1 {
		t.Errorf("excused %d losses, want 1", r.Excused)
	}
	// Without the pause on record, the same loss is late.
	if r := Check(evs[:len(evs)-1], nil); !r.Has(KindLateLoss) {
		t.Errorf("late loss not reported without the pause: %v", r.Violations)
	}
	// A stall counts only for its own length: one that ended soon after
	// the deadline does not excuse a loss signalled much later.
	short := concat(hold("a", 1, 1, 1*ms, 950*ms, 1300*ms, 1200*ms),
		[]Event{{Ev: EvStall, PID: 1, T: 940 * ms, End: 1000 * ms}})
	if r := Check(short, nil); !r.Has(KindLateLoss) {
		t.Errorf("a short stall excused a loss 250 ms late: %v", r.Violations)
	}
}
