package apisim

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

var (
	simSeeds = flag.Int("apisim.seeds", 0, "public-API simulation: seeds to run (default 200; 20 with -short)")
	simSeed  = flag.Int64("apisim.seed", -1, "public-API simulation: run only this seed, and show its violations in full")
	simDur   = flag.Duration("apisim.duration", 0, "public-API simulation: fake time simulated per seed (default 30s)")
	simTries = flag.Int("apisim.tries", 30, "TestDebugSeed: runs of -apisim.seed until one breaks a promise")
	simTrace = flag.String("apisim.trace", "", "TestDebugSeed: write the breaking run's trace (trace.go) to this file; TestSimulation and the outage simulations: each breaking seed's, to this file with the seed appended")
)

// seeds is the seeds of a run: -apisim.seed alone, or the first
// -apisim.seeds.
func seeds() []int64 {
	if *simSeed >= 0 {
		return []int64{*simSeed}
	}
	n := *simSeeds
	if n == 0 {
		n = 200
		if !longtest.Enabled() {
			n = 40
		}
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

// simulate runs one seed in a bubble of its own.
// keepTrace writes the trace of a seed that broke a promise to
// -apisim.trace's file with the seed appended, and drops r's trace, so
// that the runs of many seeds do not keep theirs.
func keepTrace(t *testing.T, seed int64, r *Report) {
	t.Helper()
	if r.Trace != nil && len(r.Violations) > 0 {
		if err := os.WriteFile(fmt.Sprintf("%s.%d", *simTrace, seed), []byte(strings.Join(r.Trace, "\n")+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
	r.Trace = nil
}

func simulate(t *testing.T, seed int64) Report {
	var r Report
	synctest.Test(t, func(t *testing.T) {
		r = Simulate(seed, simOptions(seed))
	})
	return r
}

// simulateCalm runs one calm seed (Options.Calm) in a bubble of its own.
func simulateCalm(t *testing.T, seed int64) Report {
	var r Report
	synctest.Test(t, func(t *testing.T) {
		r = Simulate(seed, Options{Duration: *simDur, Calm: true})
	})
	return r
}

// TestSimulation runs the public API under every fault of the seeds, and
// checks every promise; it prints one summary line.
func TestSimulation(t *testing.T) {
	var total Figures
	var up UpgradeFigures
	start := time.Now()
	tracing = *simTrace != ""
	defer func() { tracing = false }()
	for _, seed := range seeds() {
		r := simulate(t, seed)
		keepTrace(t, seed, &r)
		total.Add(r.Figures)
		_, f := CheckUpgradeFigures(r.History)
		up.Add(f)
		for i, v := range r.Violations {
			if i == 5 && *simSeed < 0 {
				t.Errorf("seed %d: ... %d more", seed, len(r.Violations)-i)
				break
			}
			t.Errorf("seed %d: %v", seed, v)
		}
	}
	t.Logf("upgrade: %v", up)
	t.Logf("%v (%v)", total, time.Since(start).Round(time.Second))
}

// TestDebugSeed runs -apisim.seed again and again until it breaks a
// promise (goroutines' order is not the seed's), and shows the sessions
// of the holds whose Lost() was late: every confirmation the oracle saw.
func TestDebugSeed(t *testing.T) {
	if *simSeed < 0 {
		t.Skip("needs -apisim.seed")
	}
	tracing = *simTrace != ""
	defer func() { tracing = false }()
	var w *world
	for range *simTries { // goroutines' order is not the seed's: try again until it breaks
		synctest.Test(t, func(t *testing.T) {
			w = debugWorld(*simSeed, simOptions(*simSeed))
		})
		if len(Check(&w.hist)) > 0 {
			break
		}
	}
	for _, v := range Check(&w.hist) {
		t.Error(v)
	}
	if w.trace != nil {
		if err := os.WriteFile(*simTrace, []byte(strings.Join(w.trace.lines, "\n")+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
	logSetRuns(t, &w.hist, Check(&w.hist))
	for _, h := range w.hist.Holds {
		for _, v := range Check(&w.hist) {
			if strings.Contains(v.What, " "+h.Key+"#") {
				t.Logf("%v w %d/%d call %v landed %v session %s deadline %v ended %v lost %v paused %v", h, h.Weight, h.Limit, h.Call.Format(tf), h.Landed.Format(tf), h.Session, h.Deadline.Format(tf), h.Ended.Format(tf), h.LostAt.Format(tf), h.Paused)
				break
			}
		}
	}
	for _, d := range w.hist.Dos {
		if d.Run == nil || len(d.Confirmed) == 0 || d.Deadline.IsZero() || d.Confirmed[0].Before(d.Deadline) {
			continue
		}
		p := w.procs[d.Proc]
		c, _ := p.claimAt(claimKey{d.Key, d.Run.Token}, d.Run.Start)
		t.Logf("Do p%d %s token %d err %v: run [%v, %v) session %s landed %v pauses %v", d.Proc, d.Key, d.Run.Token, d.Err, d.Run.Start.Format(tf), d.Run.End.Format(tf), c.session, c.at.Format(tf), p.pauses)
		if l := p.leases[c.session]; l != nil {
			for _, u := range l.updates {
				t.Logf("   confirmed at %v deadline %v", u.at.Format(tf), u.deadline.Format(tf))
			}
		}
	}
	for _, h := range w.hist.Holds {
		if h.Deadline.IsZero() || (!h.Ended.IsZero() && h.Ended.Before(h.Deadline)) || (!h.LostAt.IsZero() && !h.LostAt.After(h.Deadline)) {
			continue
		}
		t.Logf("%v session %s ended %v lost %v", h, h.Session, h.Ended.Format(tf), h.LostAt.Format(tf))
		if l := w.procs[h.Proc].leases[h.Session]; l != nil {
			for _, u := range l.updates {
				t.Logf("   confirmed at %v deadline %v", u.at.Format(tf), u.deadline.Format(tf))
			}
		}
	}
}
