package harness

import (
	"fmt"
	"strings"
)

// renderFloorShares writes, for each library whose report has the
// floor, its Mutex and RWMutex figures against that floor: rates as
// commands per second over the store's inserts per second, latencies as
// a multiple of one insert's p50.
func renderFloorShares(p printf, reports []*Report) {
	p("Where the rest goes, for the figures far from their floor (traced): [floor.md](floor.md); the tails of the handoff: " +
		"[handoff-tails.md](handoff-tails.md).\n\n")
	for _, r := range reports {
		one := r.value(FloorScenario, floorParam(1), "durable inserts/s, all connections")
		if one == nil {
			continue
		}
		p("**%s against its floor.** Rates: what the scenario achieved, the commands each cycle sent, and so the commands per "+
			"second it sent, over the durable inserts per second the store committed from as many connections (a scenario of one "+
			"process against one connection; a cycle's rate from its p50 where the scenario times cycles one at a time). Latencies: "+
			"a p50 or p99 over the p50 of one insert from one connection: 2 for a Lock+Unlock whose two inserts are all its time.\n\n", r.Lib)
		renderFloorRates(p, r)
		renderFloorLatencies(p, r)
	}
}

// floorRate is one row of the rates table: a rate (or the p50 of one
// cycle, from which the rate follows), the commands per cycle, and the
// connections of the floor it is read against.
type floorRate struct {
	scenario, param, label string
	rate, p50, cmds        string // metrics; rate or p50
	conns                  int
}

// floorRates lists the rows of the rates table, in the order of the
// scenarios.
func floorRates(r *Report) []floorRate {
	rows := []floorRate{{scenario: Uncontended, label: "Lock+Unlock, one process, nobody else (Lock+Unlock/s)",
		p50: "Lock+Unlock p50", cmds: "commands per Lock+Unlock (steady state)", conns: 1}}
	procs := r.Options.Procs
	rows = append(rows, floorRate{scenario: Throughput, param: count(procs, "process") + ", one key", label: count(procs, "process") + ", one key, contended (holds/s)",
		rate: "holds/s, all processes", cmds: "commands per Lock+Unlock, all processes", conns: procs})
	for _, n := range r.Options.Readers {
		param := count(n, "reading process") + ", one key"
		rows = append(rows, floorRate{scenario: RWMutexScenario, param: param, label: param + " (RLock+RUnlock/s)",
			rate: "RLock+RUnlock/s, all processes", cmds: "commands per RLock+RUnlock", conns: n})
	}
	for _, n := range r.Options.Live {
		param := count(n, "live reader") + ", one key"
		rows = append(rows, floorRate{scenario: RWMutexScenario, param: param, label: param + ", one process's RLock+RUnlock (RLock+RUnlock/s)",
			p50: "one process's RLock+RUnlock p50 (the others hold)", cmds: "commands per RLock+RUnlock, one process (the others hold)", conns: 1})
	}
	return rows
}

func renderFloorRates(p printf, r *Report) {
	var lines []string
	for _, row := range floorRates(r) {
		rate := r.value(row.scenario, row.param, row.rate)
		if row.p50 != "" {
			if v := r.value(row.scenario, row.param, row.p50); v != nil && *v > 0 {
				x := 1000 / *v
				rate = &x
			}
		}
		if rate == nil {
			continue
		}
		cmds := r.value(row.scenario, row.param, row.cmds)
		floor := r.value(FloorScenario, floorParam(row.conns), "durable inserts/s, all connections")
		perSec, share := "–", "–"
		if cmds != nil {
			perSec = num(*rate * *cmds)
			if floor != nil && *floor > 0 {
				share = num(*rate * *cmds / *floor)
			}
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", row.label, orDash(r.Loads[row.scenario]), num(*rate), numOrDash(cmds), perSec, numOrDash(floor), share))
	}
	if len(lines) == 0 {
		return
	}
	p("| %s: figure | load average at the scenario's start | rate (/s) | commands each | commands/s | floor: durable inserts/s | commands/s ÷ floor |\n", r.Lib)
	p("|---|---|---|---|---|---|---|\n%s\n", strings.Join(lines, ""))
}

func renderFloorLatencies(p printf, r *Report) {
	ins := r.value(FloorScenario, floorParam(1), "insert p50")
	if ins == nil || *ins <= 0 {
		return
	}
	var lines []string
	for _, f := range r.Figures {
		if !floorLatency(f) || f.Value == nil {
			continue
		}
		label := f.Metric
		if f.Param != "" {
			label = f.Param + ": " + label
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s |\n", label, orDash(r.Loads[f.Scenario]), num(*f.Value), num(*f.Value / *ins)))
	}
	if len(lines) == 0 {
		return
	}
	p("| %s: figure | load average at the scenario's start | ms | ÷ one insert's p50 (%s ms) |\n|---|---|---|---|\n%s\n", r.Lib, num(*ins), strings.Join(lines, ""))
}

// floorLatency reports whether f is a Mutex or RWMutex latency the
// latencies table shows.
func floorLatency(f Figure) bool {
	if f.Unit != "ms" {
		return false
	}
	switch f.Scenario {
	case Uncontended:
		return true
	case Handoff:
		return f.Param != "floor"
	case RWMutexScenario:
		return strings.Contains(f.Metric, "p50")
	}
	return false
}

// value returns the median of r's figure of scenario, param and metric,
// or nil.
func (r *Report) value(scenario, param, metric string) *float64 {
	for _, f := range r.Figures {
		if f.Scenario == scenario && f.Param == param && f.Metric == metric && !f.AtLeast {
			return f.Value
		}
	}
	return nil
}

func numOrDash(v *float64) string {
	if v == nil {
		return "–"
	}
	return num(*v)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
