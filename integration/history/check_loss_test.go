package history

import (
	"strings"
	"testing"
)

// A hold relied on past its deadline without a loss signal is reported
// with the part of the lateness its process was running: the stalls it
// detected itself and the pauses the test injected excuse only their own
// length. A hold kept a TTL past its deadline (dsync's planted
// MutexPastDeadline) stays a violation however many short stalls the
// process reported meanwhile.
func TestCheckSilentLossCountsOnlyStalls(t *testing.T) {
	// Relied on 300 ms past its deadline; stalled 280 ms of it: 20 ms
	// running, within the 50 ms margin.
	excused := concat(hold("a", 1, 1, 1*ms, 950*ms, 1250*ms, 0),
		[]Event{{Ev: EvStall, PID: 1, T: 960 * ms, End: 1240 * ms}})
	if r := Check(excused, nil); !r.OK() {
		t.Fatalf("a hold relied on past its deadline only while stalled: %v", r.Violations)
	}
	// Kept a TTL past its deadline, stalled 15 ms in every 50 (300 ms of
	// the 1000): 700 ms running.
	planted := hold("a", 1, 1, 1*ms, 950*ms, 1950*ms, 0)
	for at := 960 * ms; at < 1950*ms; at += 50 * ms {
		planted = append(planted, Event{Ev: EvStall, PID: 1, T: at, End: at + 15*ms})
	}
	r := Check(planted, nil)
	if !r.Has(KindSilentLoss) {
		t.Fatalf("a hold kept a TTL past its deadline was not reported: %v", r.Violations)
	}
	if msg := r.Violations[0].Msg; !strings.Contains(msg, "700ms of it running") || !strings.Contains(msg, "tolerance 50ms") {
		t.Errorf("the report does not say how much of the lateness was running: %s", msg)
	}
	// A stall of another process excuses nothing.
	other := concat(hold("a", 1, 1, 1*ms, 950*ms, 1250*ms, 0),
		[]Event{{Ev: EvStall, PID: 2, T: 960 * ms, End: 1240 * ms}})
	if r := Check(other, nil); !r.Has(KindSilentLoss) {
		t.Fatalf("another process's stall excused a silent loss: %v", r.Violations)
	}
}
