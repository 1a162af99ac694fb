//go:build dsync_planted

package leader_test

import (
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/internal/plant"
)

// TestTransferPlanted plants each of Transfer's bugs and asserts that
// the transfer scenario of TestTransferPastQueuedCandidates catches it:
// a release without waiting for the candidate to be next (another
// candidate leads next), and a release before the term's context is
// cancelled (two terms at once).
func TestTransferPlanted(t *testing.T) {
	for _, bug := range []struct {
		name string
		bug  plant.Bug
	}{
		{"TransferSkipsWait", plant.TransferSkipsWait},
		{"TransferReleasesFirst", plant.TransferReleasesFirst},
	} {
		t.Run(bug.name, func(t *testing.T) {
			plant.Set(bug.bug)
			defer plant.Set(plant.None)
			synctest.Test(t, func(t *testing.T) {
				v := transferScenario(t, 4, 3)
				if len(v) == 0 {
					t.Fatal("not caught")
				}
				t.Logf("caught: %v", v)
			})
		})
	}
}
