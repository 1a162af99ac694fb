package harness

import (
	"strings"
	"testing"
)

// TestRenderPartition: the partition scenario's figures appear in its
// table and in the summary of a row per number of processes, each cell
// from the figure it names.
func TestRenderPartition(t *testing.T) {
	var sm partSamples
	sm.hb = 1e9
	sm.joinMs, sm.joinHB, sm.joinMoved, sm.joinMin = []float64{1500, 1700}, []float64{1.5, 1.7}, []float64{2, 3}, []float64{2, 2}
	sm.leaveMs, sm.leaveMoved, sm.leaveMin = []float64{900}, []float64{2}, []float64{2}
	sm.killOwned, sm.killOwnedMs, sm.killBalMs = []float64{1.4}, []float64{4200}, []float64{4300}
	sm.killMoved, sm.killMin = []float64{2}, []float64{2}
	sm.handoffs = []float64{20, 30, 40}
	sm.steadyPerS, sm.steadyPerHB = []float64{3}, []float64{3}
	sm.steadyUpkeep, sm.steadyOwn = []float64{1.75}, []float64{1.25}
	sm.steadyByName = map[string][]float64{"findAndModify": {1}}
	sm.steadyRuns = 1
	r := &Report{Lib: "dsync", Options: Defaults}
	sm.report(r, "8 processes, 16 shards", 3e9, "")
	md := Render([]*Report{r}, "go test")
	for _, want := range []string{
		"## 13. Partitioned election",
		"| 8 processes, 16 shards: join → balanced, median (ms) | 1600 |",
		"| 8 processes, 16 shards: steady state: findAndModify per member per heartbeat, mean of the runs (cmds) | 1.00 |",
		"| 8 processes, 16 shards | 1600 | 1.60 | 3.00 / 2.00 | 900 | 2.00 / 2.00 | 1.40 / 1.40 | 30.0 / 40.0 | 3.00 | 1.75 / 1.25 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
