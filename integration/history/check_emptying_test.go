package history

import (
	"testing"
	"time"
)

// TestCheckAcrossEmptyings: with Options.EmptyingGap, a hold after an
// emptying whose token is not above that of a hold begun more than the gap
// before the emptying is a violation; one begun within the gap, or before
// a restore, is not compared.
func TestCheckAcrossEmptyings(t *testing.T) {
	reset := func(kind string, at int64) []Event {
		return []Event{{Ev: EvReset, Kind: kind, T: at}}
	}
	opts := &Options{EmptyingGap: time.Second}
	for _, tc := range []struct {
		name string
		evs  []Event
		ok   bool
	}{
		{"a lower token after the emptying, 1.5 s after", concat(hold("q", 1, 9, 1*ms, 950*ms, 100*ms, 0), reset(ResetEmpty, 1600*ms),
			hold("r", 2, 5, 1700*ms, 2650*ms, 1800*ms, 0)), false},
		{"a lower token after a hold within the gap", concat(hold("q", 1, 9, 1*ms, 950*ms, 100*ms, 0), reset(ResetEmpty, 900*ms),
			hold("r", 2, 5, 1700*ms, 2650*ms, 1800*ms, 0)), true},
		{"a higher token after the emptying", concat(hold("q", 1, 9, 1*ms, 950*ms, 100*ms, 0), reset(ResetEmpty, 1600*ms),
			hold("r", 2, 10, 1700*ms, 2650*ms, 1800*ms, 0)), true},
		{"a lower token after a restore", concat(hold("q", 1, 9, 1*ms, 950*ms, 100*ms, 0), reset(ResetEmpty, 1600*ms),
			reset(ResetRestore, 1650*ms), hold("r", 2, 5, 1700*ms, 2650*ms, 1800*ms, 0)), true},
		{"a lower token two emptyings later", concat(hold("q", 1, 9, 1*ms, 950*ms, 100*ms, 0), reset(ResetEmpty, 1600*ms),
			reset(ResetEmpty, 1650*ms), hold("r", 2, 5, 1700*ms, 2650*ms, 1800*ms, 0)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.evs, opts)
			if r.OK() != tc.ok || !tc.ok && !r.Has(KindTokenOrder) {
				t.Errorf("violations %v, want ok %v", r.Violations, tc.ok)
			}
			if !Check(tc.evs, nil).OK() {
				t.Errorf("without EmptyingGap: %v, want none", Check(tc.evs, nil).Violations)
			}
		})
	}
}
