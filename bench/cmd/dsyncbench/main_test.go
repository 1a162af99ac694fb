package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/bench/harness"
	"github.com/go-dsync/dsync/internal/mongotest"
)

// testDBEnv names the database of a test's child processes.
const testDBEnv = "DSYNCBENCH_TEST_DB"

func TestMain(m *testing.M) {
	if harness.IsChild() {
		os.Exit(harness.RunChild(&driver{uri: os.Getenv("MONGODB_URI"), db: os.Getenv(testDBEnv)}))
	}
	mongotest.Main(m)
}

// TestDriverRuns runs the scenarios that exercise the dsync driver (locks,
// elections, processes, kills, single attempts, the read side of an
// RWMutex, a Semaphore, a Once) with tiny sizes. It checks
// that they run, not what they measure.
func TestDriverRuns(t *testing.T) {
	srv := mongotest.Shared(t)
	db := mongotest.DatabaseName(t)
	t.Setenv("MONGODB_URI", srv.URI())
	t.Setenv(testDBEnv, db)
	t.Cleanup(func() {
		c := mongotest.NewClient(t, srv.URI())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Database(db).Drop(ctx)
	})
	o := harness.Quick
	o.Waiters = []int{1}
	o.HoldMin, o.HoldMax = time.Millisecond, 2*time.Millisecond
	o.FailoverTTL = time.Second
	o.Contenders = 3
	o.Rounds = 2
	o.ThroughputFor = 300 * time.Millisecond
	scenarios := []string{harness.Uncontended, harness.Handoff, harness.Failover, harness.Graceful, harness.Race,
		harness.RWMutexScenario, harness.SemaphoreScenario, harness.OnceScenario}
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
