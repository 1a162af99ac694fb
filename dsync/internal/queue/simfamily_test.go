package queue_test

import (
	"math/rand/v2"
	"testing"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/integration/history"
)

// Limits of weighted keys. A semaphore's limit belongs to each claim, and
// processes may disagree on it (a limit changed by a rolling restart, or
// configured differently): claims of different limits conflict, and take
// turns in queue order. On some seeds the weighted key's claims draw
// their limit from {2, 3}, claim by claim, the most mixed a key can get;
// on the others every claim's limit is simLimit.
//
// The draws come from a stream of their own, so that the other seeds run
// exactly as they did before limits were mixed.

// simLimits draws the limits of a seed's weighted claims.
type simLimits struct {
	rng *rand.Rand // nil: every limit is simLimit
}

func newSimLimits(seed int64) simLimits {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x11a175))
	if rng.IntN(2) == 0 {
		return simLimits{}
	}
	return simLimits{rng: rng}
}

// draw returns the limit of the next weighted claim.
func (l simLimits) draw() int64 {
	if l.rng == nil {
		return simLimit
	}
	return 2 + l.rng.Int64N(2)
}

// limitChanges counts the weighted holds that began after a weighted hold
// of another limit on their key: how often claims of different limits
// took turns.
func limitChanges(r *history.Report) int {
	n := 0
	for _, hs := range r.Holds {
		var last int64
		for _, h := range hs {
			if h.Mode != history.ModeWeighted {
				continue
			}
			if last != 0 && h.Limit != last {
				n++
			}
			last = h.Limit
		}
	}
	return n
}

// TestSimulationCatchesPlantedFamilyBugs is the negative control of the
// sync family's rules: each planted error must show up as a violation on
// some seed.
func TestSimulationCatchesPlantedFamilyBugs(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  queue.Bug
		// want, if set, is the kind of violation that must report it:
		// the rule of the checker this error is the control of.
		want string
	}{
		{"weighted claims passing claims of another limit", queue.BugLimitIgnored, ""},
		{"a Once trusting its read before the claim", queue.BugOnceStaleRead, ""},
		{"a reader admitted past a waiting writer", queue.BugReadersPassWaitingWriters, ""},
		{"a small weight admitted past a larger waiting one", queue.BugWeightedFirstFit, history.KindFIFO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !queue.Planted {
				t.Skip("planting a bug in the engine needs -tags dsync_planted")
			}
			for _, seed := range plantedSeeds() {
				r, _ := runSim(t, seed, tc.bug, simNoBug, false)
				if r.OK() || tc.want != "" && !r.Has(tc.want) {
					continue
				}
				t.Logf("caught on seed %d: %v", seed, r.Violations[0])
				return
			}
			t.Errorf("no seed out of %d caught it", len(plantedSeeds()))
		})
	}
}
