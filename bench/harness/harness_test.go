//go:build linux

package harness

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// flockDriver locks with flock(2) on files in a directory: a real lock
// shared by processes, so the scenarios can be run without a server.
type flockDriver struct{ dir string }

func (d flockDriver) Name() string { return "flock" }

func (d flockDriver) Describe(context.Context) (string, string) { return "flock(2)", "the kernel" }

func (d flockDriver) Connect(_ context.Context, m *Meter, ns string) (Conn, error) {
	dir := filepath.Join(d.dir, ns)
	return flockConn{dir: dir, m: m}, os.MkdirAll(dir, 0o700)
}

type flockConn struct {
	dir string
	m   *Meter
}

func (c flockConn) NewMutex(key string, _ time.Duration) (Locker, error) {
	f, err := os.OpenFile(filepath.Join(c.dir, key), os.O_CREATE|os.O_RDWR, 0o600)
	return &flock{f: f, m: c.m}, err
}

func (c flockConn) NewElection(name string, ttl time.Duration) (Locker, error) {
	return c.NewMutex("election-"+name, ttl)
}

func (c flockConn) Close() error { return nil }

type flock struct {
	f *os.File
	m *Meter
}

func (l *flock) op(how int) error {
	t := time.Now()
	err := syscall.Flock(int(l.f.Fd()), how)
	l.m.Command("flock", time.Since(t), err != nil && err != syscall.EWOULDBLOCK)
	return err
}

func (l *flock) Lock(context.Context) error   { return l.op(syscall.LOCK_EX) }
func (l *flock) Unlock(context.Context) error { return l.op(syscall.LOCK_UN) }

func (l *flock) TryLock(context.Context) (bool, error) {
	err := l.op(syscall.LOCK_EX | syscall.LOCK_NB)
	if err == syscall.EWOULDBLOCK {
		return false, nil
	}
	return err == nil, err
}

const dirEnv = "HARNESS_TEST_DIR"

func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(RunChild(flockDriver{dir: os.Getenv(dirEnv)}))
	}
	os.Exit(m.Run())
}

// TestScenariosRun runs every scenario with tiny sizes against flock: the
// harness works (processes, handoffs, kills, counting), whatever the
// figures.
func TestScenariosRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(dirEnv, dir)
	o := Quick
	o.HoldMin, o.HoldMax = time.Millisecond, 2*time.Millisecond
	o.FailoverTTL = 500 * time.Millisecond
	o.IdleWindow = 100 * time.Millisecond
	o.RenewTTL = 300 * time.Millisecond
	o.ThroughputFor = 200 * time.Millisecond
	r := Run(context.Background(), flockDriver{dir: dir}, Options{}, o)
	if len(r.Notes) > 0 {
		t.Fatalf("scenarios failed: %v", r.Notes)
	}
	got := map[string]bool{}
	for _, f := range r.Figures {
		got[f.Scenario] = true
		if f.Value == nil && f.Scenario != Renewal {
			t.Errorf("%s: no value: %s", f.Key(), f.Note)
		}
	}
	for _, s := range AllScenarios {
		if !got[s] {
			t.Errorf("no figures for scenario %s", s)
		}
	}
	md := Render([]*Report{r}, "go test")
	for _, want := range []string{"## 1. Uncontended", "## 8. Race", "| flock |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, c := range []struct{ p, want float64 }{{50, 3}, {99, 5}, {20, 1}, {100, 5}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile(nil) is not NaN")
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median = %v, want 2.5", got)
	}
	if got := Jain([]float64{1, 1, 1, 1}); got != 1 {
		t.Errorf("Jain(equal) = %v", got)
	}
	if got := Jain([]float64{4, 0, 0, 0}); got != 0.25 {
		t.Errorf("Jain(one) = %v", got)
	}
}

func TestMerge(t *testing.T) {
	v1, v2 := 1.0, 2.0
	old := &Report{Lib: "x", Figures: []Figure{
		{Scenario: Handoff, Metric: "p50", Unit: "ms", Value: &v1},
		{Scenario: Idle, Metric: "rate", Unit: "cmds/s", Value: &v1},
	}}
	old.Merge(&Report{Lib: "x", Figures: []Figure{{Scenario: Handoff, Metric: "p50", Unit: "ms", Value: &v2}}})
	if len(old.Figures) != 2 || *old.Figures[0].Value != 2 || *old.Figures[1].Value != 1 {
		t.Fatalf("merged: %+v", old.Figures)
	}
}
