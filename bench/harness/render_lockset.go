package harness

import "strings"

// renderLockSet writes, under the lockset scenario's table, each
// library's lock sets beside its baseline (the same sets taken by
// Mutexes one by one), with their ratio, and how to measure them again.
func renderLockSet(p printf, reports []*Report) {
	for _, r := range reports {
		var rows []Figure // the lock sets' figures, in order
		for _, f := range r.Figures {
			if f.Scenario == LockSetScenario && strings.HasSuffix(f.Param, ": "+setsAsSetParam) {
				rows = append(rows, f)
			}
		}
		if len(rows) == 0 {
			continue
		}
		sizes := strings.TrimSuffix(rows[0].Param, ": "+setsAsSetParam)
		p("**%s: lock sets beside the baseline** (%s; the same number of sets each way):\n\n", r.Lib, sizes)
		p("| figure | one lock set each | Mutexes one by one in the keys' order | lock sets ÷ Mutexes |\n|---|---|---|---|\n")
		for _, f := range rows {
			base := strings.TrimSuffix(f.Param, setsAsSetParam) + setsByMutexesParam
			label := f.Metric
			if f.Unit != "" {
				label += " (" + f.Unit + ")"
			}
			b := r.value(LockSetScenario, base, f.Metric)
			var theirs Figure
			if b != nil {
				theirs = Figure{Value: b}
			}
			p("| %s | %s | %s | %s |\n", label, numOrDash(f.Value), numOrDash(b), ratio(f, theirs))
		}
		p("\n")
	}
	p("To measure them again: `bash bench/run.sh --only dsync --scenarios lockset`. Deadlock detection (cycles of lock sets " +
		"broken, waits that close no cycle never broken) is measured by tests: " +
		"`go test -count=1 -timeout 60m -v -run 'TestLockSetDeadlockTrials|TestLockSetNoFalseDeadlock' ./dsync/mongo -lockset.trials=200 -lockset.waits=10000`.\n\n")
}
