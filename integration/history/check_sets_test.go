package history

import "testing"

// member is the acquire event of one member of the grant wid of size n.
func member(pid int, wid, key string, tok uint64, n int64, at int64) Event {
	return Event{Ev: EvAcquire, Worker: "w", PID: pid, Key: key, Token: tok, T: at, DL: at + 100*ms,
		Kind: KindSetMember, WID: wid, Value: n}
}

// A lock-set grant is whole when its process recorded every member, once,
// each with a token; each member is also an ordinary hold.
func TestCheckSets(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []Event
		bad  bool
	}{
		{"whole", []Event{member(1, "g1", "a", 3, 2, 0), member(1, "g1", "b", 5, 2, ms)}, false},
		{"two grants", []Event{member(1, "g1", "a", 3, 2, 0), member(1, "g1", "b", 5, 2, ms),
			member(2, "g2", "a", 4, 2, 200*ms), member(2, "g2", "b", 6, 2, 201*ms)}, false},
		{"a member missing", []Event{member(1, "g1", "a", 3, 3, 0), member(1, "g1", "b", 5, 3, ms)}, true},
		{"a member with no token", []Event{member(1, "g1", "a", 3, 2, 0), member(1, "g1", "b", 0, 2, ms)}, true},
		{"a key twice", []Event{member(1, "g1", "a", 3, 2, 0), member(1, "g1", "a", 5, 2, ms)}, true},
		{"two processes", []Event{member(1, "g1", "a", 3, 2, 0), member(2, "g1", "b", 5, 2, ms)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.evs, nil)
			partial := 0
			for _, v := range r.Violations {
				if v.Kind == KindPartialSet {
					partial++
				} else if v.Kind != KindOverlap && v.Kind != KindTokenOrder {
					t.Errorf("unexpected violation: %v", v)
				}
			}
			if got := partial > 0; got != tc.bad {
				t.Fatalf("partial-set violations %d, want some: %v (%v)", partial, tc.bad, r.Violations)
			}
			if !tc.bad && !r.OK() {
				t.Fatalf("a whole history has violations: %v", r.Violations)
			}
		})
	}
}
