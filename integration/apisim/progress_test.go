package apisim

import (
	"flag"
	"testing"
	"time"
)

var calmSeeds = flag.Int("apisim.calmseeds", 10, "public-API simulation: calm seeds to run (TestCalmSimulation), where a stalled hold's next waiter must hold soon")

// TestCalmSimulation runs calm seeds (Options.Calm), in which
// CheckProgress also judges the handoff after a stall, and checks every
// promise.
func TestCalmSimulation(t *testing.T) {
	var total Figures
	start := time.Now()
	for seed := int64(1); seed <= int64(*calmSeeds); seed++ {
		r := simulateCalm(t, seed)
		total.Add(r.Figures)
		for i, v := range r.Violations {
			if i == 5 {
				t.Errorf("seed %d: ... %d more", seed, len(r.Violations)-i)
				break
			}
			t.Errorf("seed %d: %v", seed, v)
		}
	}
	t.Logf("%v (%v)", total, time.Since(start).Round(time.Second))
}
