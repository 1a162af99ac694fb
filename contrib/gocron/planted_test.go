//go:build dsync_planted

package dsyncgocron_test

import (
	"testing"

	"github.com/go-dsync/dsync/internal/plant"
)

// plantBudget is how many seeds the planted bug may take to be caught.
const plantBudget = 200

// TestPlanted plants plant.LockerIgnoresHold (a Locker that counts a slot
// as won when its claim failed, as if it held the slot) and
// asserts that the Locker's simulation catches it, by the promise it
// breaks, within plantBudget seeds; it reports the seed that caught it.
func TestPlanted(t *testing.T) {
	skipUnderRace(t)
	plant.Set(plant.LockerIgnoresHold)
	defer plant.Set(plant.None)
	for seed := int64(1); seed <= plantBudget; seed++ {
		r := simulateLocker(t, seed)
		for _, v := range r.Violations {
			if v.Promise == PromiseSlot {
				t.Logf("caught on seed %d: %v", seed, v)
				return
			}
		}
	}
	t.Errorf("not caught in %d seeds", plantBudget)
}
