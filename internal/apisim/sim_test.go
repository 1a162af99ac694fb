package apisim

import (
	"flag"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

var (
	simSeeds  = flag.Int("apisim.seeds", 0, "public-API simulation: seeds to run (default 200; 20 with -short)")
	simAcross = flag.Bool("apisim.across", false, "public-API simulation: fail on tokens that go back across an emptying (issue 42, defect 3) instead of skipping")
	simSeed   = flag.Int64("apisim.seed", -1, "public-API simulation: run only this seed, and show its violations in full")
	simDur    = flag.Duration("apisim.duration", 0, "public-API simulation: fake time simulated per seed (default 30s)")
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
		if testing.Short() {
			n = 20
		}
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

// simulate runs one seed in a bubble of its own.
func simulate(t *testing.T, seed int64) Report {
	var r Report
	synctest.Test(t, func(t *testing.T) {
		r = Simulate(seed, Options{Duration: *simDur})
	})
	return r
}

// TestSimulation runs the public API under every fault of the seeds, and
// checks every promise; it prints one summary line.
func TestSimulation(t *testing.T) {
	var total Figures
	var across []string
	start := time.Now()
	for _, seed := range seeds() {
		r := simulate(t, seed)
		total.Add(r.Figures)
		for _, v := range CheckTokensAcrossEmptyings(r.History) {
			across = append(across, fmt.Sprintf("seed %d: %v", seed, v))
		}
		for i, v := range r.Violations {
			if i == 5 && *simSeed < 0 {
				t.Errorf("seed %d: ... %d more", seed, len(r.Violations)-i)
				break
			}
			t.Errorf("seed %d: %v", seed, v)
		}
	}
	t.Logf("%v; %d tokens back across emptyings (issue 42, defect 3) (%v)", total, len(across), time.Since(start).Round(time.Second))

	// The README promises tokens "above those handed out more than a
	// second before" across an emptying of the collections. Issue 42
	// (defect 3) shows them going back when a start held back over the
	// emptying lands after it (and docs/operations.md allows a process
	// that cached a key to continue its old queue); until it is closed,
	// this subtest reports what it found and skips (-apisim.across makes
	// it fail).
	t.Run("TokensAcrossEmptyings", func(t *testing.T) {
		for i, a := range across {
			if i == 5 {
				break
			}
			t.Log(a)
		}
		switch {
		case len(across) == 0:
		case *simAcross:
			t.Errorf("%d tokens went back across emptyings", len(across))
		default:
			t.Skipf("issue 42, defect 3 (open): %d tokens went back across emptyings; -apisim.across makes this fail", len(across))
		}
	})
}

// TestDebugSeed runs -apisim.seed again and again until it breaks a
// promise (goroutines' order is not the seed's), and shows the sessions
// of the holds whose Lost() was late: every confirmation the oracle saw.
func TestDebugSeed(t *testing.T) {
	if *simSeed < 0 {
		t.Skip("needs -apisim.seed")
	}
	var w *world
	for range 30 { // goroutines' order is not the seed's: try again until it breaks
		synctest.Test(t, func(t *testing.T) {
			w = debugWorld(*simSeed, Options{Duration: *simDur})
		})
		if len(Check(&w.hist)) > 0 {
			break
		}
	}
	for _, v := range Check(&w.hist) {
		t.Error(v)
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
