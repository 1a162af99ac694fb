package apisim

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
)

var (
	setSeeds = flag.Int("apisim.setseeds", 0, "public-API simulation with lock sets: seeds to run (default 4; 200 with DSYNC_LONG)")
	simSets  = flag.Bool("apisim.sets", false, "TestSimulation and TestDebugSeed: run with lock sets (Options.Sets; odd seeds calm)")
)

// setOptions are the options of a lock-set seed: odd seeds are calm,
// for the bounds of check_set_cycles.go, and every other one of those
// steady too (no process's own faults), so that a cycle not broken in
// time is rarely left unjudged for a fault in its spell.
func setOptions(seed int64) Options {
	return Options{Duration: *simDur, Sets: true, Calm: seed%2 == 1, Steady: seed%4 == 1}
}

// simulateSets runs one lock-set seed in a bubble of its own.
func simulateSets(t *testing.T, seed int64) Report {
	var r Report
	synctest.Test(t, func(t *testing.T) {
		r = Simulate(seed, setOptions(seed))
	})
	return r
}

// TestSetSimulation runs lock sets and incremental lockers (sets.go)
// beside every primitive, under every fault of the seeds, and checks
// every promise, the lock sets' too (check_sets.go,
// check_set_cycles.go); it prints one summary line.
func TestSetSimulation(t *testing.T) {
	runSeeds(t, *setSeeds, simulateSets)
}

// logSetRuns shows the calls of the Sets that vs name, and their claims'
// lives.
func logSetRuns(t *testing.T, h *History, vs []Violation) {
	for _, r := range h.SetRuns {
		if r.ID == "" || !slices.ContainsFunc(vs, func(v Violation) bool { return strings.Contains(v.What, r.ID) }) {
			continue
		}
		t.Logf("set %s: p%d %s D %v", r.ID, r.Proc, r.Who, r.D)
		for _, c := range r.Calls {
			t.Logf("   %s %v [%v, %v) err %v tokens %v", c.Op, c.Keys, c.Call.Format(tf), c.Return.Format(tf), c.Err, c.Tokens)
		}
		for _, c := range h.Lives {
			if c.Waiter == r.ID {
				t.Logf("   claim %s@%d [%v, %v)", c.Key, c.Epoch, c.Landed.Format(tf), c.Ended.Format(tf))
			}
		}
	}
}
