package harness

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// scenarioText says what a scenario measures, with the sizes of o.
func scenarioText(sc string, o Options) (title, text string) {
	switch sc {
	case Uncontended:
		return "Uncontended Lock+Unlock", fmt.Sprintf("One process locks and unlocks one key in a loop (%d cycles per run); nobody else uses it. "+
			"Commands are counted by the client (MongoDB: the driver's command monitor; Redis: a go-redis hook; etcd: gRPC interceptors, "+
			"one per unary RPC or stream message sent); bytes are everything the client's connections wrote and read, driver heartbeats included.", o.Cycles)
	case Handoff:
		return "Handoff", fmt.Sprintf("One process holds the lock, N others wait in Lock. The holder unlocks after a random %v–%v hold; the figure is the time "+
			"from the start of Unlock in the holder to the return of Lock in the next holder, both read from CLOCK_MONOTONIC in their own processes "+
			"(%d handoffs per run). The former holder then waits again, so N processes always wait.", o.HoldMin, o.HoldMax, o.Handoffs)
	case Failover:
		return "Failover", fmt.Sprintf("A holder (or leader) and one waiting process; the holder is killed with SIGKILL at a random point of its renewal cycle; "+
			"the figure is the time from the kill to Lock (Campaign) returning in the waiter, as a multiple of the lease TTL (%d kills).", o.FailoverRuns)
	case Graceful:
		return "Graceful leader handoff", fmt.Sprintf("Like Handoff, with an election: the leader calls Resign, and the figure is the time until the next "+
			"candidate's Campaign returns (%d handoffs per run).", o.Handoffs)
	case Idle:
		return "Load of waiting processes", fmt.Sprintf("One process holds the lock, N wait in Lock; what the waiters send per second, counted over %v per run. "+
			"Leases have the TTL %v.", o.IdleWindow, DefaultTTL)
	case Renewal:
		return "Renewal cost", fmt.Sprintf("One process holds many locks (TTL %v, renewed every %v) with the library's own renewal, or the loop a user "+
			"would write where it has none; commands and bytes per renew interval (over %d intervals), the latency of the renew command(s), "+
			"and how long per interval at least one renew command is in flight. Acquiring gives up after %v.", o.RenewTTL, o.RenewTTL/3, o.RenewIntervals, o.AcquireBudget)
	case Throughput:
		return "Contended throughput", fmt.Sprintf("%d processes lock and unlock one key as fast as they can, for %v per run; holds per second in all, "+
			"and how evenly they are split (Jain's index: 1 is an equal split, 1/%d is one process taking everything).", o.Procs, o.ThroughputFor, o.Procs)
	case Scale:
		return "Scale", fmt.Sprintf("What grows with the history of the lock collection, and with the number of waiting processes; "+
			"one run per figure. **Idle keys**, in two series, each in a namespace of its own grown in turn to each size by %d Clients "+
			"locking and unlocking new keys (named as a user names dated jobs, `report-2026-11-23-<i>`); a size whose loading would take "+
			"longer than %v is not measured (the notes say so). *Keys in the collection*: used within the idle age, nothing compacted; "+
			"*keys compacted*: left idle past a short idle age, and compacted before the figures are taken (the lock collection's "+
			"documents counted until they stop falling; when they did, after the loading, is a figure). At each size up to %d fresh "+
			"Clients (a new connection and backend each, cold caches: a cron job's process) each make a first Lock+Unlock, one at a time, "+
			"timed from the new connection to Unlock's return (fewer once %v is spent, and none more after one is cut short at %v, shown "+
			"as ≥: the notes say so); their commands are counted by name by the driver's command monitor, and the server's CPU over "+
			"each is divided among them, as are the commands the loaders (connected all along) send meanwhile. The status page is the library's command-line listing of %d keys, cut short after %v. What the "+
			"store keeps is counted per collection after loading (and compaction). **Waiting processes**: one process holds a key and W "+
			"wait for it (beyond %d processes, the waiting Clients are packed several to a process, each with its own connection and "+
			"backend: the notes say how); %d handoffs as in Handoff, then, while they wait, what each waiter sends over %v, by command, "+
			"and the server's CPU meanwhile.",
			o.ScaleLoaders, o.ScaleLoadBudget, o.ScaleFresh, o.ScaleFreshBudget, o.ScaleFreshTimeout, o.ScaleStatusLimit, o.ScaleStatusTimeout,
			o.ScaleProcs, o.Handoffs, o.ScaleIdleWindow)
	case RWMutexScenario:
		return "Reader/writer lock: readers", fmt.Sprintf("N processes, each with the same reader/writer lock (dsync.RWMutex; etcd's "+
			"experimental/recipes RWMutex), take and release its read side (RLock+RUnlock) as fast as they can, for %v per run, with no writer. "+
			"RLock+RUnlock per second in all, and the commands each process sent over its cycles divided by its cycles (renewals and "+
			"other background commands included).", o.ThroughputFor)
	case SemaphoreScenario:
		return "Semaphore", fmt.Sprintf("A semaphore of %d units. **Uncontended**: one process acquires and releases one unit in a loop "+
			"(%d cycles per run), as in Uncontended. **Handoff**: all %d units are held, %d of them by a process that keeps them; the holder of "+
			"the last releases it after a random %v–%v hold and N processes wait in Acquire(1); the figure is the time from the start of "+
			"Release in the holder to the return of Acquire in the next holder, as in Handoff (%d handoffs per run).",
			o.SemLimit, o.Cycles, o.SemLimit, o.SemLimit-1, o.HoldMin, o.HoldMax, o.Handoffs)
	case OnceScenario:
		return "Once", fmt.Sprintf("**Racing**: %d processes call Do on a new Once of a fresh key at the same CLOCK_MONOTONIC instant, "+
			"%d keys per run; f returns at once. The time from that instant until the last Do returned (p50, p99 within a run), how many times "+
			"f ran for a key (the most over all keys), and the commands all the processes sent during their Do. **Done key**: one process "+
			"calls Do on a key done earlier, with a new Once each time (%d per run): what a process starting up pays; a Once that saw the "+
			"record answers later calls from memory.", o.OnceProcs, o.OnceRaces, o.Cycles)
	case Race:
		return "Race for a free lock", "Contenders, each with its own connection, make a single attempt (TryLock) at the same moment on a released lock; " +
			"more than one winner in a round means two holders at once."
	}
	return sc, ""
}

// Render writes the reports as a Markdown document: dsync first, then its
// peers, with the ratio dsync ÷ peer of every figure.
func Render(reports []*Report, command string) string {
	slices.SortStableFunc(reports, func(a, b *Report) int {
		if a.Lib == "dsync" {
			return -1
		}
		if b.Lib == "dsync" {
			return 1
		}
		return 0
	})
	var o Options
	for _, r := range reports {
		if r.Options.Runs != 0 {
			o = r.Options
			break
		}
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Benchmark results\n\n")
	p("Written by `%s`; do not edit, run it again. Every figure is measured, on one machine in one run of the command, ", command)
	p("against servers on loopback. A figure is the median of %d repeated runs unless its row says otherwise ", o.Runs)
	p("(the JSON files next to this one have every run); p50 and p99 are taken within each run, then the median of the runs is shown. ")
	p("`dsync ÷ X` is dsync's figure divided by library X's: below 1, dsync has less of it (time, commands, bytes, holds/s). ")
	p("— marks a library without the primitive a scenario measures (the note under the table says what it has instead); ")
	p("– a figure not measured for that library.\n\n")
	p("Each library runs on the server it is made for, so latencies include the server: dsync and mongo-lock share one server ")
	p("(see the table below), redsync has Redis and etcd has etcd. Nothing else is tuned: every server runs with its defaults ")
	p("and its data in a temporary directory.\n\n")

	if len(reports) > 0 {
		m := reports[0].Machine
		p("## Machine\n\n")
		p("- CPU: %s, %d cores\n- %s, kernel %s\n- Go %s\n", m.CPU, m.Cores, m.OS, m.Kernel, m.Go)
		p("- load average when each library's run began:")
		for i, r := range reports {
			if i > 0 {
				p(";")
			}
			p(" %s %s", r.Lib, r.Machine.Load)
		}
		p("\n\n")
	}
	p("## Libraries and servers\n\n| name | library | server | measured | took |\n|---|---|---|---|---|\n")
	for _, r := range reports {
		p("| %s | %s | %s | %s | %v |\n", r.Lib, r.Library, r.Server, r.Started.Format(time.RFC3339), time.Duration(r.Took).Round(time.Second))
	}
	p("\n")

	for i, sc := range AllScenarios {
		// The libraries with figures of this scenario, or lacking its
		// primitive, dsync's first.
		var libs []string
		lacks := map[string]string{} // lib → why
		for _, r := range reports {
			if why, ok := r.Lacking(sc); ok {
				lacks[r.Lib] = why
				libs = append(libs, r.Lib)
			} else if slices.ContainsFunc(r.Figures, func(f Figure) bool { return f.Scenario == sc }) {
				libs = append(libs, r.Lib)
			}
		}
		if sc == Scale && len(libs) > 0 {
			so := o // the sizes of a report that ran the scenario
			for _, r := range reports {
				if r.Lib == libs[0] {
					so = r.Options
				}
			}
			title, text := scenarioText(sc, so)
			p("## %d. %s\n\n%s\n\n", i+1, title, text)
			renderScale(p, reports)
			continue
		}
		// Rows in order of first appearance, dsync's first.
		var keys []string
		figs := map[string]map[string]Figure{} // key → lib → figure
		for _, r := range reports {
			for _, f := range r.Figures {
				if f.Scenario != sc {
					continue
				}
				k := f.Key()
				if figs[k] == nil {
					figs[k] = map[string]Figure{}
					keys = append(keys, k)
				}
				figs[k][r.Lib] = f
			}
		}
		if len(keys) == 0 {
			continue
		}
		// The sizes of the first report that measured the scenario.
		so := o
		for _, r := range reports {
			if _, lacking := r.Lacking(sc); !lacking && slices.Contains(libs, r.Lib) && r.Options.Runs != 0 {
				so = r.Options
				break
			}
		}
		title, text := scenarioText(sc, so)
		p("## %d. %s\n\n%s\n\n", i+1, title, text)
		p("| figure |")
		for _, l := range libs {
			p(" %s |", l)
		}
		for _, l := range libs[1:] {
			p(" dsync ÷ %s |", l)
		}
		p("\n|---|%s\n", strings.Repeat("---|", 2*len(libs)-1))
		var notes []string
		seen := map[string]bool{}
		for _, k := range keys {
			var any Figure
			for _, f := range figs[k] {
				any = f
				break
			}
			label := any.Metric
			if any.Param != "" {
				label = any.Param + ": " + label
			}
			if any.Unit != "" {
				label += " (" + any.Unit + ")"
			}
			p("| %s |", label)
			for _, l := range libs {
				f, ok := figs[k][l]
				if _, lacking := lacks[l]; lacking {
					p(" — |")
				} else {
					p(" %s |", cell(f, ok))
				}
				if ok && f.Note != "" {
					n := l
					if f.Param != "" {
						n += " (" + f.Param + ")"
					}
					n += ": " + f.Note
					if !seen[n] {
						seen[n] = true
						notes = append(notes, n)
					}
				}
			}
			for _, l := range libs[1:] {
				ours, theirs := figs[k]["dsync"], figs[k][l]
				if ours.Value == nil || theirs.Value == nil || *theirs.Value == 0 || ours.AtLeast || theirs.AtLeast {
					p(" – |")
					continue
				}
				p(" %s |", num(*ours.Value / *theirs.Value))
			}
			p("\n")
		}
		for _, l := range libs {
			if why, ok := lacks[l]; ok {
				notes = append(notes, fmt.Sprintf("%s: %s", l, why))
			}
		}
		if len(notes) > 0 {
			p("\n")
			for _, n := range notes {
				p("- %s\n", n)
			}
		}
		p("\n")
	}
	var any bool
	for _, r := range reports {
		if len(r.Notes) > 0 {
			if !any {
				p("## Notes by library\n\n")
				any = true
			}
			for _, n := range r.Notes {
				p("- **%s**: %s\n", r.Lib, n)
			}
		}
	}
	return b.String()
}

// num formats v with about three significant digits.
// cell is a figure as a table shows it: "–" when it was not measured,
// "—" when it does not apply to the library (Lacking), "n/a" when it
// could not be measured, "≥ v" for a lower bound.
func cell(f Figure, ok bool) string {
	switch {
	case !ok:
		return "–"
	case f.Lacking:
		return "—"
	case f.Value == nil:
		return "n/a"
	case f.AtLeast:
		return "≥ " + num(*f.Value)
	}
	return num(*f.Value)
}

func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}
