//go:build dsync_planted

package fencemongo

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/go-dsync/dsync/internal/plant"
)

// The negative control of the fenced-register simulation: with a Fence
// whose condition refuses nothing (plant.FenceSkipsCondition: a holder
// with an old token reads and writes over a later holder's fence),
// porcupine must find a history that no fenced register gives, within
// a few seeds.
func TestPlantedFenceSkipsTheCondition(t *testing.T) {
	plant.Set(plant.FenceSkipsCondition)
	defer plant.Set(plant.None)
	h := newFenceSimHarness(t)
	const seeds = 10
	for seed := int64(1); seed <= seeds; seed++ {
		run := h.run(t, seed)
		if t.Failed() {
			return
		}
		if verdict := run.check(t, false); verdict == porcupine.Illegal {
			t.Logf("planted FenceSkipsCondition caught at seed %d: %s", seed, run.figures)
			return
		}
	}
	t.Fatalf("a Fence that skips its condition went unnoticed through %d seeds", seeds)
}
