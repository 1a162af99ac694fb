package apisim

import (
	"flag"
	"os"
	"strings"
	"testing"
	"testing/synctest"
)

var simUpgrade = flag.Bool("apisim.upgrade", false, "public-API simulation: every seed runs the rolling upgrade (default: one in ten), every other one calm")

// simOptions are seed's options: one seed in ten runs the rolling
// upgrade (upgrade.go), or every seed with -apisim.upgrade; every other
// one of those calm, so that what the upgrade promises in calm runs is
// judged.
func simOptions(seed int64) Options {
	if *simSets {
		return setOptions(seed)
	}
	if *simUpgrade {
		return Options{Duration: *simDur, Upgrade: true, Calm: seed%2 == 1}
	}
	up := seed%10 == 3
	return Options{Duration: *simDur, Upgrade: up, Calm: up && seed%20 == 13}
}

// TestUpgradeDebugSeed runs -apisim.seed with the rolling upgrade again
// and again (up to -apisim.tries times) until it breaks one of the
// upgrade's promises, and shows that run: the candidates, the steps, the
// terms of the upgraded election and the faults of the candidates'
// processes; with -apisim.trace, the run's trace (trace.go) goes to that
// file.
func TestUpgradeDebugSeed(t *testing.T) {
	if *simSeed < 0 {
		t.Skip("needs -apisim.seed")
	}
	tracing = *simTrace != ""
	defer func() { tracing = false }()
	o := simOptions(*simSeed)
	if !o.Upgrade {
		o = Options{Duration: *simDur, Upgrade: true, Calm: *simSeed%2 == 1}
	}
	for range *simTries {
		var w *world
		synctest.Test(t, func(t *testing.T) { w = debugWorld(*simSeed, o) })
		h := &w.hist
		vs := CheckUpgrade(h)
		if len(vs) == 0 {
			continue
		}
		if w.trace != nil {
			if err := os.WriteFile(*simTrace, []byte(strings.Join(w.trace.lines, "\n")+"\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
		for _, v := range vs {
			t.Error(v)
		}
		u := h.Upgrade
		t.Logf("calm %v, stop-first %v, delay %v, bound %v, hosts %v", u.Calm, u.StopFirst, u.Delay, u.bound(), u.Hosts)
		for _, c := range u.Candidates {
			t.Logf("candidate %v HB %v [%v, %v)", c, c.HB, c.Start.Format(tf), c.Closed.Format(tf))
		}
		for _, s := range u.Steps {
			t.Logf("step slot %d [%v, %v) done %v", s.Slot, s.Start.Format(tf), s.End.Format(tf), s.Done.Format(tf))
		}
		for _, x := range h.Holds {
			if x.Key == storedElection(upgradeElection) {
				t.Logf("term %v lost %v ended %v deadline %v", x, x.LostAt.Format(tf), x.Ended.Format(tf), x.Deadline.Format(tf))
			}
		}
		for _, f := range u.onHosts(h).ProcFaults {
			t.Logf("fault p%d %s [%v, %v]", f.Proc, f.Kind, f.From.Format(tf), f.To.Format(tf))
		}
		for _, e := range h.Emptyings {
			t.Logf("emptying %v", e.Format(tf))
		}
		return
	}
	t.Logf("seed %d broke no promise of the upgrade in %d runs", *simSeed, *simTries)
}
