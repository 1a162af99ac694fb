package history

import (
	"bytes"
	"strings"
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

func writes(key string, pid int, tok uint64, vals ...int64) []Event {
	var evs []Event
	for _, v := range vals {
		wid := strings.Repeat("x", int(pid)) + string(rune('a'+v))
		evs = append(evs,
			Event{Ev: EvWriteStart, PID: pid, Key: key, Token: tok, WID: wid, Value: v},
			Event{Ev: EvWrite, PID: pid, Key: key, Token: tok, WID: wid, Value: v, Outcome: OutOK})
	}
	return evs
}

func TestCheckWrites(t *testing.T) {
	good := concat(writes("k", 1, 1, 1, 2), writes("k", 2, 2, 3))
	r := &Report{}
	CheckWrites(r, good, RegisterState{Key: "k", Final: 3})
	if !r.OK() || r.Writes.OK != 3 {
		t.Fatalf("good writes: %v, stats %+v", r.Violations, r.Writes)
	}

	// The negative control: a stale writer overwrote an increment.
	lost := concat(writes("k", 1, 1, 1, 2), writes("k", 2, 2, 3), writes("k", 1, 1, 3))
	r = &Report{}
	CheckWrites(r, lost, RegisterState{Key: "k", Final: 3})
	if !r.Has(KindLostUpdate) {
		t.Fatalf("lost update not found: %v", r.Violations)
	}

	// An unknown outcome may or may not count, but not twice.
	unk := append(writes("k", 1, 1, 1), Event{Ev: EvWriteStart, PID: 3, Key: "k", Token: 3, WID: "u", Value: 2})
	for final, ok := range map[int64]bool{0: false, 1: true, 2: true, 3: false} {
		r = &Report{}
		CheckWrites(r, unk, RegisterState{Key: "k", Final: final})
		if r.OK() != ok {
			t.Errorf("final %d: ok=%v, want %v (%v)", final, r.OK(), ok, r.Violations)
		}
	}

	// A fenced register tells exactly which writes it applied.
	r = &Report{}
	CheckWrites(r, good, RegisterState{Key: "k", Final: 3, Applied: map[string]bool{"xb": true, "xxd": true}})
	if !r.Has(KindRegister) {
		t.Fatalf("missing applied write not found: %v", r.Violations)
	}
}

func TestReadToleratesATruncatedLastLine(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(`{"ev":"acquire","pid":1,"key":"k","tok":1,"t":5,"dl":9}` + "\n")
	buf.WriteString(`{"ev":"end","pid":1,"key":"k","tok":1,"t":6,"d`)
	evs, tr, err := Read(&buf)
	if err != nil || !tr || len(evs) != 1 {
		t.Fatalf("Read: %d events, truncated %v, err %v", len(evs), tr, err)
	}
	_, _, err = Read(strings.NewReader("{\"ev\":\"x\"\n{\"ev\":\"y\"}\n"))
	if err == nil {
		t.Fatal("a bad line in the middle was accepted")
	}
}

func TestWriterAppends(t *testing.T) {
	path := t.TempDir() + "/h.jsonl"
	for i := range 2 {
		w, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(Event{Ev: EvStart, PID: i + 1, T: Now()}); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	evs, tr, err := ReadFile(path)
	if err != nil || tr || len(evs) != 2 {
		t.Fatalf("ReadFile: %v %v %v", evs, tr, err)
	}
}

func TestMonoMatchesClockMonotonic(t *testing.T) {
	before := Now()
	m := Mono(time.Now())
	after := Now()
	if m < before-int64(time.Microsecond) || m > after+int64(time.Microsecond) {
		t.Fatalf("Mono(time.Now()) = %d, not within [%d, %d]", m, before, after)
	}
	if d := Mono(time.Now().Add(time.Second)) - Now(); d < int64(999*time.Millisecond) || d > int64(1001*time.Millisecond) {
		t.Fatalf("Mono(now+1s) − Now() = %v", time.Duration(d))
	}
}

// moded sets the mode, weight and limit of a hold's acquire event.
func moded(evs []Event, mode string, weight, limit int64) []Event {
	evs[0].Mode, evs[0].Weight, evs[0].Limit = mode, weight, limit
	return evs
}

// Shared holds may overlap each other, and weighted ones while their
// weights fit the limit; every other overlap, and a token order broken
// between holds that conflict, is a violation.
func TestCheckModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []Event
		want string // "" for none
	}{{
		name: "readers overlap, begin out of token order",
		evs: concat(moded(hold("a", 1, 2, 1*ms, 950*ms, 500*ms, 0), ModeShared, 0, 0),
			moded(hold("b", 2, 1, 100*ms, 1050*ms, 600*ms, 0), ModeShared, 0, 0)),
	}, {
		name: "a writer after readers",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeShared, 0, 0),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeShared, 0, 0),
			hold("c", 3, 3, 700*ms, 1650*ms, 800*ms, 0)),
	}, {
		name: "a writer while a reader holds",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeShared, 0, 0),
			hold("c", 3, 2, 400*ms, 1350*ms, 800*ms, 0)),
		want: KindOverlap,
	}, {
		name: "a reader while a writer holds",
		evs: concat(hold("c", 3, 1, 1*ms, 950*ms, 500*ms, 0),
			moded(hold("a", 1, 2, 400*ms, 1350*ms, 800*ms, 0), ModeShared, 0, 0)),
		want: KindOverlap,
	}, {
		name: "a writer's token below a reader's begun before",
		evs: concat(moded(hold("a", 1, 5, 1*ms, 950*ms, 100*ms, 0), ModeShared, 0, 0),
			hold("c", 3, 4, 200*ms, 1150*ms, 300*ms, 0)),
		want: KindTokenOrder,
	}, {
		name: "weights within the limit",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 2, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeWeighted, 1, 3)),
	}, {
		name: "weights over the limit",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 2, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeWeighted, 2, 3)),
		want: KindOverlap,
	}, {
		name: "weighted holds of different limits",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeWeighted, 1, 2)),
		want: KindOverlap,
	}, {
		name: "weighted holds of different limits in turn",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 100*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 3, 200*ms, 1150*ms, 600*ms, 0), ModeWeighted, 1, 2),
			moded(hold("c", 3, 2, 300*ms, 1250*ms, 700*ms, 0), ModeWeighted, 1, 2)),
	}, {
		name: "a limit's token below another limit's begun before",
		evs: concat(moded(hold("a", 1, 5, 1*ms, 950*ms, 100*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 4, 200*ms, 1150*ms, 300*ms, 0), ModeWeighted, 1, 2)),
		want: KindTokenOrder,
	}, {
		name: "a small claim after a larger one that waits, with room for both",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 600*ms, 1550*ms, 800*ms, 0), ModeWeighted, 1, 3),
			moded(hold("c", 3, 3, 100*ms, 1050*ms, 200*ms, 0), ModeWeighted, 1, 3)),
	}, {
		name: "a small claim passes a larger one waiting for room",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 600*ms, 1550*ms, 800*ms, 0), ModeWeighted, 2, 3),
			moded(hold("c", 3, 3, 100*ms, 1050*ms, 200*ms, 0), ModeWeighted, 1, 3)),
		want: KindFIFO,
	}, {
		name: "a small claim after a larger waiting one that lost its session",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 600*ms, 550*ms, 0, 0), ModeWeighted, 2, 3),
			moded(hold("c", 3, 3, 100*ms, 1050*ms, 200*ms, 0), ModeWeighted, 1, 3)),
	}, {
		name: "a weighted hold with a reader",
		evs: concat(moded(hold("a", 1, 1, 1*ms, 950*ms, 500*ms, 0), ModeWeighted, 1, 3),
			moded(hold("b", 2, 2, 100*ms, 1050*ms, 600*ms, 0), ModeShared, 0, 0)),
		want: KindOverlap,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.evs, nil)
			switch {
			case tc.want == "" && !r.OK():
				t.Fatalf("violations: %v", r.Violations)
			case tc.want != "" && (r.OK() || r.Violations[0].Kind != tc.want):
				t.Fatalf("violations %v, want %s", r.Violations, tc.want)
			}
		})
	}
}

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
