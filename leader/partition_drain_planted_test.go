//go:build dsync_planted

package leader_test

import (
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/internal/plant"
)

// TestDrainPlanted plants DrainOnlyOwned (a drained member keeps its
// weight and only avoids the shards it owns) and asserts that
// drainScenario catches it: the drained member takes shards back.
func TestDrainPlanted(t *testing.T) {
	plant.Set(plant.DrainOnlyOwned)
	defer plant.Set(plant.None)
	synctest.Test(t, func(t *testing.T) {
		if v := drainScenario(t); len(v) == 0 {
			t.Fatal("not caught")
		} else {
			t.Logf("caught: %v", v)
		}
	})
}
