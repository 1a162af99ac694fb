package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/bench/harness"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// testDBEnv names the database of a test's child processes.
const testDBEnv = "DSYNCBENCH_TEST_DB"

func TestMain(m *testing.M) {
	if harness.IsChild() {
		os.Exit(harness.RunChild(&driver{uri: os.Getenv("MONGODB_URI"), db: os.Getenv(testDBEnv)}))
	}
	mongotest.Main(m)
}

// useServer points this binary's child processes at the shared server
// and at one database for every test of the package, in the environment
// they inherit (t.Setenv would keep the tests from running in parallel;
// each scenario run has a namespace of its own), and drops that database
// once the last test using it ends.
func useServer(t *testing.T) (*mongotest.Server, string) {
	srv := mongotest.Shared(t)
	env.mu.Lock()
	defer env.mu.Unlock()
	if env.db == "" {
		env.db = mongotest.DatabaseName(t)
		os.Setenv("MONGODB_URI", srv.URI())
		os.Setenv(testDBEnv, env.db)
	}
	env.users++
	db := env.db
	t.Cleanup(func() {
		env.mu.Lock()
		env.users--
		last := env.users == 0
		env.mu.Unlock()
		if !last {
			return
		}
		c := mongotest.NewClient(t, srv.URI())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Database(db).Drop(ctx)
	})
	return srv, db
}

// env is the server and database useServer set for the child processes,
// and how many tests use them now.
var env struct {
	mu    sync.Mutex
	db    string
	users int
}

// TestDriverRuns runs the scenarios that exercise the dsync driver (locks,
// elections, processes, kills, single attempts, the read side of an
// RWMutex, a Semaphore, a Once) with tiny sizes. It checks
// that they run, not what they measure.
func TestDriverRuns(t *testing.T) {
	t.Parallel()
	srv, db := useServer(t)
	o := harness.Quick
	o.Waiters = []int{1}
	o.HoldMin, o.HoldMax = time.Millisecond, 2*time.Millisecond
	o.FailoverTTL = time.Second
	o.Contenders = 3
	o.Rounds = 2
	o.ThroughputFor = 300 * time.Millisecond
	scenarios := []string{harness.FloorScenario, harness.Uncontended, harness.Handoff, harness.Failover, harness.Graceful, harness.Race,
		harness.RWMutexScenario, harness.SemaphoreScenario, harness.OnceScenario, harness.TransferScenario}
	r := harness.Run(context.Background(), &driver{uri: srv.URI(), db: db}, harness.Options{Scenarios: scenarios}, o)
	if len(r.Notes) > 0 {
		t.Fatalf("scenarios failed: %v", r.Notes)
	}
	got := map[string]bool{}
	for _, f := range r.Figures {
		got[f.Scenario] = true
		if f.Value == nil {
			t.Errorf("%s: no value: %s", f.Key(), f.Note)
		}
		if f.Note != "" {
			t.Errorf("%s: %s", f.Key(), f.Note)
		}
	}
	if len(r.Lacks) > 0 {
		t.Errorf("dsync lacks %v", r.Lacks)
	}
	for _, s := range scenarios {
		if !got[s] {
			t.Errorf("no figures for %s", s)
		}
	}
	if !strings.Contains(r.Server, "MongoDB") {
		t.Errorf("server described as %q", r.Server)
	}
}

// TestPartitionRuns runs the partition scenario with tiny sizes: members
// join, leave, are killed, and their shards are seen balanced each time,
// with no two fns of a shard at once. It checks that it runs and that
// what it measures is sane, not how fast.
func TestPartitionRuns(t *testing.T) {
	t.Parallel()
	o := harness.Quick
	r := runQuick(t, harness.PartitionScenario)
	fig := map[string]float64{}
	for _, f := range r.Figures {
		if f.Value == nil {
			t.Errorf("%s: no value: %s", f.Key(), f.Note)
			continue
		}
		fig[f.Param+"|"+f.Metric] = *f.Value
	}
	two := fmt.Sprintf("2 processes, %d shards|", o.PartShards)
	for key, want := range map[string]float64{
		fmt.Sprintf("1 process, %d shards|join: fewest shards that must move", o.PartShards):    float64(o.PartShards),
		two + "join: fewest shards that must move":                                              float64(o.PartShards / 2),
		two + "graceful leave: fewest shards that must move":                                    float64(o.PartShards / 2),
		two + "SIGKILL: fewest shards that must move":                                           float64(o.PartShards / 2),
		two + "two fns of one shard at once, or a token not above the shard's last (must be 0)": 0,
	} {
		if got, ok := fig[key]; !ok || got != want {
			t.Errorf("%s = %v (found %v), want %v", key, got, ok, want)
		}
	}
	if v := fig[two+"join: shards moved, most"]; v < float64(o.PartShards/2) {
		t.Errorf("a join moved %v shards, fewer than its share", v)
	}
	if v := fig[two+"steady state: commands/s per member"]; v <= 0 {
		t.Errorf("members sent %v commands/s while nothing changed", v)
	}
}

// TestLockSetRuns runs the lockset scenario with tiny sizes: processes
// take random sets of keys as lock sets and as Mutexes one by one, and
// every set is held, no key by two at once, each token above the key's
// last. It checks that it runs and that what it checks holds, not how
// fast.
func TestLockSetRuns(t *testing.T) {
	t.Parallel()
	o := harness.Quick
	r := runQuick(t, harness.LockSetScenario)
	held := 0
	for _, f := range r.Figures {
		switch {
		case f.Value == nil:
			t.Errorf("%s: no value: %s", f.Key(), f.Note)
		case strings.HasSuffix(f.Metric, "(must be 0)") && *f.Value != 0:
			t.Errorf("%s = %v", f.Key(), *f.Value)
		case f.Metric == "sets held, all runs":
			held++
			if *f.Value != float64(o.LockSetSets) {
				t.Errorf("%s = %v, want %d", f.Key(), *f.Value, o.LockSetSets)
			}
		}
	}
	if held != 2 {
		t.Errorf("sets held reported for %d ways, want 2 (lock sets, Mutexes)", held)
	}
}

// runQuick runs one scenario with harness.Quick's sizes on the test's
// server, logging to t, and fails the test if the run left notes or
// lacks.
func runQuick(t *testing.T, scenario string) *harness.Report {
	t.Helper()
	srv, db := useServer(t)
	r := harness.Run(context.Background(), &driver{uri: srv.URI(), db: db}, harness.Options{Scenarios: []string{scenario}, Log: testWriter{t}}, harness.Quick)
	if len(r.Notes) > 0 || len(r.Lacks) > 0 {
		t.Fatalf("notes %v, lacks %v", r.Notes, r.Lacks)
	}
	return r
}

// testWriter logs the scenario's progress to t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}
