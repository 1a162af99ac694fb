//go:build dsync_planted

package leader_test

import (
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/internal/plant"
)

// TestSteerPlanted plants each of steering's bugs and asserts that the
// scenarios of the steering tests catch it: candidates that ignore
// ranks (the next leader is not the best, and no preemption happens),
// and a candidate that begins its term without the version gate (an
// older version leads while a newer one is live).
func TestSteerPlanted(t *testing.T) {
	for _, c := range []struct {
		name     string
		bug      plant.Bug
		scenario func(*testing.T) []string
	}{
		{"PriorityIgnored/next", plant.PriorityIgnored, priorityScenario},
		{"PriorityIgnored/preempt", plant.PriorityIgnored, preemptScenario},
		{"PreemptAtBeat", plant.PreemptAtBeat, preemptScenario},
		{"VersionGateSkipped", plant.VersionGateSkipped, gateScenario},
	} {
		t.Run(c.name, func(t *testing.T) {
			plant.Set(c.bug)
			defer plant.Set(plant.None)
			synctest.Test(t, func(t *testing.T) {
				v := c.scenario(t)
				if len(v) == 0 {
					t.Fatal("not caught")
				}
				t.Logf("caught: %v", v)
			})
		})
	}
}
