package history

import (
	"strings"
	"testing"
)

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
