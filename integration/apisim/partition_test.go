package apisim

import (
	"flag"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

var (
	partSeeds  = flag.Int("apisim.partseeds", 0, "partition simulation: seeds to run (default 100 with DSYNC_LONG=1, else 20)")
	partShards = flag.Int("apisim.shards", 0, "partition simulation: shards (default 6 on odd seeds, 8 on even)")
	partCalm   = flag.Bool("apisim.calm", false, "partition simulation: every seed calm, so that each is judged for liveness (default: half)")
	partOutage = flag.Bool("apisim.partoutage", false, "TestPartitionDebugSeed: run the seed as TestPartitionOutageSimulation does (store outages, calm and steady)")
)

// partitionCalm reports whether seed runs calm: half the seeds, or all
// with -apisim.calm.
func partitionCalm(seed int64) bool { return *partCalm || seed%4 < 2 }

// partitionDrains reports whether seed's operator drains members: half
// the seeds, calm or not, so that the other half judge the moves of
// joins and leaves as often as before drains existed.
func partitionDrains(seed int64) bool { return seed%4 == 0 || seed%4 == 3 }

// partitionProgress reports whether seed's members have shard progress
// deadlines: three seeds in four. The fourth, calm and without drains,
// judges the moves of joins and leaves alone, as often as before stalls
// moved shards too (a stall is a change, and the calm checks wait for
// the spells between changes).
func partitionProgress(seed int64) bool { return seed%4 != 1 }

// partitionSeeds is the seeds of a partition run: -apisim.seed alone, or
// the first -apisim.partseeds.
func partitionSeeds() []int64 {
	if *simSeed >= 0 {
		return []int64{*simSeed}
	}
	n := *partSeeds
	if n == 0 {
		n = 100
		if !longtest.Enabled() {
			n = 20
		}
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

// simulatePartition runs one seed with the partition actor beside the
// primitives, in a bubble of its own; calm on half the seeds, or on all
// with allCalm.
func simulatePartition(t *testing.T, seed int64, allCalm bool) (Report, PartitionFigures, []Violation) {
	shards := *partShards
	if shards == 0 {
		shards = 6 + 2*int(seed%2)
	}
	// Half the seeds calm, for spells long enough to judge ownership and
	// balance in.
	ps := &PartitionSim{Shards: shards, Calm: allCalm || partitionCalm(seed), Drains: partitionDrains(seed), Progress: partitionProgress(seed)}
	var r Report
	synctest.Test(t, func(t *testing.T) {
		r = Simulate(seed, Options{Duration: *simDur, Actors: []Actor{ps.Actor(0.3)}, Calm: ps.Calm})
	})
	vs, f := ps.CheckFigures(r.History)
	return r, f, vs
}

// TestPartitionSimulation runs members of one leader.Partition on the
// simulated processes, joining, leaving, crashing and paused under every
// fault of the seeds, and checks the Partition's promises
// (check_partition.go), and every other. It prints the partition's
// figures and the simulation's summary line.
func TestPartitionSimulation(t *testing.T) {
	var total Figures
	var part PartitionFigures
	skipped := 0
	start := time.Now()
	for _, seed := range partitionSeeds() {
		r, f, _ := simulatePartition(t, seed, false)
		total.Add(r.Figures)
		part.Add(f)
		if f.Skipped {
			skipped++
		}
		for i, v := range r.Violations {
			if i == 5 && *simSeed < 0 {
				t.Errorf("seed %d: ... %d more", seed, len(r.Violations)-i)
				break
			}
			t.Errorf("seed %d: %v", seed, v)
		}
	}
	if part.Joins == 0 || part.Terms == 0 {
		t.Errorf("no member joined or owned a shard: %v", part)
	}
	t.Logf("partition: %d seeds (%d judged for safety only: not calm, or spans disagree), %v", total.Seeds, skipped, part)
	if part.ViewsBack > 0 {
		t.Logf("a view's token went back (not promised: checkPartitionWatch), first: %s", part.FirstBack)
	}
	t.Logf("%v (%v)", total, time.Since(start).Round(time.Second))
}

// TestPartitionDebugSeed runs -apisim.seed with the partition actor again
// and again (up to -apisim.tries times) until it breaks one of the
// Partition's promises, and shows that run: the memberships, the faults,
// every term, and every member status write (and removal) as it returned;
// with -apisim.trace, the run's trace (trace.go) goes to that file.
func TestPartitionDebugSeed(t *testing.T) {
	if *simSeed < 0 {
		t.Skip("needs -apisim.seed")
	}
	seed := *simSeed
	tracing = *simTrace != ""
	defer func() { tracing = false }()
	for range *simTries {
		var (
			mu     sync.Mutex
			writes []string
		)
		ps := &PartitionSim{Shards: 6 + 2*int(seed%2), Calm: partitionCalm(seed), Drains: partitionDrains(seed), Progress: partitionProgress(seed)}
		opts, rate := Options{Duration: *simDur, Calm: ps.Calm}, 0.3
		if *partOutage { // as simulatePartitionOutages
			ps.Calm, ps.Drains = true, false
			opts, rate = Options{Duration: *simDur, Calm: true, Outages: true, Steady: true}, 0.05
		}
		if *partShards > 0 {
			ps.Shards = *partShards
		}
		ps.writes = func(at time.Time, line string) {
			mu.Lock()
			writes = append(writes, at.Format(tf)+" "+line)
			mu.Unlock()
		}
		var w *world
		synctest.Test(t, func(t *testing.T) {
			opts.Actors = []Actor{ps.Actor(rate)}
			w = debugWorld(seed, opts)
		})
		r := Report{History: &w.hist}
		vs, _ := ps.CheckFigures(r.History)
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
		for _, a := range r.History.Actions {
			if a.Actor == PartitionActorName || a.Actor == DrainActorName {
				t.Logf("member %v", a)
			}
		}
		for _, f := range r.History.ProcFaults {
			t.Logf("fault p%d %s [%v, %v]", f.Proc, f.Kind, f.From.Format(tf), f.To.Format(tf))
		}
		ts := slices.Clone(r.History.Terms)
		slices.SortFunc(ts, func(a, b *Term) int { return a.Start.Compare(b.Start) })
		for _, x := range ts {
			t.Logf("term %v", x)
		}
		for _, l := range writes {
			t.Log("status " + l)
		}
		return
	}
	t.Logf("seed %d broke no promise of the Partition in %d runs", seed, *simTries)
}
