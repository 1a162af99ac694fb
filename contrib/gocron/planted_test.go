//go:build dsync_planted

package dsyncgocron_test

import (
	"testing"

	dsyncgocron "github.com/go-dsync/dsync/contrib/gocron"
)

// plantBudget is how many seeds the planted bug may take to be caught.
const plantBudget = 200

// TestPlanted plants the Locker's bug (a Locker that counts a slot
// as won when its claim failed, as if it held the slot) and
// asserts that the Locker's simulation catches it, by the promise it
// breaks, within plantBudget seeds; it reports the seed that caught it.
func TestPlanted(t *testing.T) {
	skipUnderRace(t)
	dsyncgocron.PlantIgnoresHold(true)
	defer dsyncgocron.PlantIgnoresHold(false)
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
