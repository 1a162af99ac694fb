package apisim

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// runSeeds plays seeds 1 to n of simulate (flag, if set; else 4, 200 in
// the long form), or the one -apisim.seed names, writes the trace of a
// seed with violations where -apisim.trace says, reports each seed's
// first five violations, and logs the figures of them all on one line.
func runSeeds(t *testing.T, flag int, simulate func(t *testing.T, seed int64) Report) {
	n := flag
	if n == 0 {
		n = 4
		if longtest.Enabled() {
			n = 200
		}
	}
	tracing = *simTrace != ""
	defer func() { tracing = false }()
	var total Figures
	start := time.Now()
	for seed := int64(1); seed <= int64(n); seed++ {
		if *simSeed >= 0 && seed != *simSeed {
			continue
		}
		r := simulate(t, seed)
		keepTrace(t, seed, &r)
		total.Add(r.Figures)
		for i, v := range r.Violations {
			if i == 5 && *simSeed < 0 {
				t.Errorf("seed %d: ... %d more", seed, len(r.Violations)-i)
				break
			}
			t.Errorf("seed %d: %v", seed, v)
		}
	}
	t.Logf("%v (%v)", total, time.Since(start).Round(time.Second))
}
