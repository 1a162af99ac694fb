//go:build linux

package harness

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
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

// NewRWMutex is flock's shared lock on a file of its own.
func (c flockConn) NewRWMutex(key string, ttl time.Duration) (RWLocker, error) {
	l, err := c.NewMutex("rw-"+key, ttl)
	return flockRW{l.(*flock)}, err
}

type flockRW struct{ l *flock }

func (r flockRW) RLock(context.Context) error   { return r.l.op(syscall.LOCK_SH) }
func (r flockRW) RUnlock(context.Context) error { return r.l.op(syscall.LOCK_UN) }

// NewSemaphore is limit files, each a unit: Acquire takes the first one
// free, polling every millisecond.
func (c flockConn) NewSemaphore(key string, limit int64, ttl time.Duration) (Semaphore, error) {
	s := &flockSemaphore{}
	for i := range limit {
		l, err := c.NewMutex(fmt.Sprintf("sem-%s-%d", key, i), ttl)
		if err != nil {
			return nil, err
		}
		s.units = append(s.units, l.(*flock))
	}
	return s, nil
}

type flockSemaphore struct {
	units []*flock
	held  []int // indexes of units, in the order taken
}

func (s *flockSemaphore) Acquire(ctx context.Context, n int64) error {
	for range n {
		for got := false; !got; {
			for i, u := range s.units {
				if !slices.Contains(s.held, i) {
					if ok, err := u.TryLock(ctx); err != nil {
						return err
					} else if ok {
						s.held, got = append(s.held, i), true
						break
					}
				}
			}
			if !got {
				time.Sleep(time.Millisecond)
			}
		}
	}
	return nil
}

func (s *flockSemaphore) Release(ctx context.Context, n int64) error {
	for range n {
		if err := s.units[s.held[0]].Unlock(ctx); err != nil {
			return err
		}
		s.held = s.held[1:]
	}
	return nil
}

// NewOnce runs f under the flock of a file, unless a marker file exists.
func (c flockConn) NewOnce(key string) (Once, error) {
	l, err := c.NewMutex("once-"+key, 0)
	return flockOnce{l: l.(*flock), done: filepath.Join(c.dir, "done-"+key)}, err
}

type flockOnce struct {
	l    *flock
	done string
}

func (o flockOnce) Do(ctx context.Context, f func(context.Context) error) error {
	if err := o.l.Lock(ctx); err != nil {
		return err
	}
	defer o.l.Unlock(ctx)
	if _, err := os.Stat(o.done); err == nil {
		return nil
	}
	if err := f(ctx); err != nil {
		return err
	}
	return os.WriteFile(o.done, nil, 0o600)
}

type flock struct {
	f     *os.File
	m     *Meter
	token uint64 // the current hold's (flockToken)
}

func (l *flock) op(how int) error {
	t := time.Now()
	err := syscall.Flock(int(l.f.Fd()), how)
	l.m.Command("flock", time.Since(t), err != nil && err != syscall.EWOULDBLOCK)
	return err
}

func (l *flock) Lock(context.Context) error {
	if err := l.op(syscall.LOCK_EX); err != nil {
		return err
	}
	var err error
	l.token, err = flockToken(l.f)
	return err
}

// Token is the fencing token of the current hold.
func (l *flock) Token() uint64 { return l.token }

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
		if f.Value == nil && f.Scenario != Renewal && !f.Lacking {
			t.Errorf("%s: no value: %s", f.Key(), f.Note)
		}
		if f.Note != "" && slices.Contains([]string{RWMutexScenario, SemaphoreScenario, OnceScenario}, f.Scenario) {
			t.Errorf("%s: %s", f.Key(), f.Note)
		}
		if f.Metric == "runs of f per key, most (must be 1)" && *f.Value != 1 {
			t.Errorf("f ran %v times for a key", *f.Value)
		}
		if f.Scenario == LockSetScenario && f.Value != nil {
			checkLockSetFigure(t, f, o)
		}
	}
	// flock has no partitioned election: the dsync command's tests run
	// that scenario (bench/cmd/dsyncbench).
	// Nor a leadership transfer.
	if want := []Lack{{PartitionScenario, "no partitioned election (sharded singleton) in this library"},
		{TransferScenario, "no leadership transfer in this library"}}; !slices.Equal(r.Lacks, want) {
		t.Errorf("lacks %v, want %v", r.Lacks, want)
	}
	for _, s := range AllScenarios {
		if !got[s] && s != PartitionScenario && s != TransferScenario {
			t.Errorf("no figures for scenario %s", s)
		}
	}
	md := Render([]*Report{r}, "go test")
	for _, want := range []string{"## 1. Uncontended", "## 8. Race", "| flock |", "## 10. Reader/writer lock", "## 12. Once",
		"| 3 live readers, one key: commands per RLock+RUnlock, one process (the others hold) (cmds) |",
		"| limit 3, 3 live units: commands per Acquire(1)+Release(1), one process (the others hold) (cmds) |",
		"## 15. The store's floor", "| 1 connection, one insert at a time: durable inserts/s, all connections (inserts/s) |",
		"**flock against its floor.**", "| 2 reading processes, one key (RLock+RUnlock/s) |", "| 1 waiting process: Unlock→Lock p50 |",
		"| 2 processes, one key, contended (holds/s) |", "load average when the scenario began: flock ",
		"## 16. Lock sets", "| 2 processes, 6 keys, sets of 2–4: one lock set each: sets held per second, all processes (sets/s) |",
		"| 2 processes, 6 keys, sets of 2–4: Mutexes locked one by one in the keys' order (baseline): time to hold a set p99 (ms) |",
		"**flock: lock sets beside the baseline** (2 processes, 6 keys, sets of 2–4;", "| sets held, all runs (sets) | 10.0 | 10.0 | 1.00 |"} {
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

// TestMergeDropsNotesOfScenariosMeasuredAgain: a note of a scenario run
// again ("scenario: what went wrong") goes with the figures it was about;
// the notes of other scenarios, and those of no scenario, stay.
func TestMergeDropsNotesOfScenariosMeasuredAgain(t *testing.T) {
	v := 1.0
	old := &Report{Lib: "x", Notes: []string{Handoff + ": process 3: error unlock", Idle + ": no acquired within 1m0s", "x has no blocking lock"}}
	old.Merge(&Report{Lib: "x", Figures: []Figure{{Scenario: Handoff, Metric: "p50", Unit: "ms", Value: &v}}, Notes: []string{Handoff + ": process 1: slow"}})
	want := []string{Idle + ": no acquired within 1m0s", "x has no blocking lock", Handoff + ": process 1: slow"}
	if !slices.Equal(old.Notes, want) {
		t.Fatalf("notes after merging %q, want %q", old.Notes, want)
	}
}

// TestMergeScale: the part of the scale scenario measured again loses the
// figures it no longer has (an older report's one series of idle keys);
// the other part stays.
func TestMergeScale(t *testing.T) {
	v := 1.0
	fig := func(param string) Figure {
		return Figure{Scenario: Scale, Param: param, Metric: "m", Unit: "ms", Value: &v}
	}
	old := &Report{Lib: "x", Figures: []Figure{fig("100 idle keys"), fig("100 keys compacted"), fig("4 waiters")}}
	old.Merge(&Report{Lib: "x", Figures: []Figure{fig("100 keys compacted"), fig("100 keys in the collection")}})
	var got []string
	for _, f := range old.Figures {
		got = append(got, f.Param)
	}
	if want := []string{"100 keys compacted", "4 waiters", "100 keys in the collection"}; !slices.Equal(got, want) {
		t.Errorf("merged: %v, want %v", got, want)
	}
}

// mutexOnly is a driver whose connections have a mutex and nothing else
// of the family, with a reason for lacking semaphores.
type mutexOnly struct{ flockDriver }

type mutexOnlyConn struct{ c flockConn }

func (c mutexOnlyConn) NewMutex(key string, ttl time.Duration) (Locker, error) {
	return c.c.NewMutex(key, ttl)
}

func (c mutexOnlyConn) Close() error { return c.c.Close() }

func (d mutexOnly) Name() string { return "mutexonly" }

func (d mutexOnly) Connect(ctx context.Context, m *Meter, ns string) (Conn, error) {
	c, err := d.flockDriver.Connect(ctx, m, ns)
	return mutexOnlyConn{c.(flockConn)}, err
}

func (d mutexOnly) Lacks(scenario string) string {
	if scenario == SemaphoreScenario {
		return "it has locks only"
	}
	return ""
}

// TestLacks: a library without the family's primitives is recorded as
// lacking them, with its reason or the default one, and measures nothing.
func TestLacks(t *testing.T) {
	family := []string{RWMutexScenario, SemaphoreScenario, OnceScenario}
	r := Run(context.Background(), mutexOnly{flockDriver{dir: t.TempDir()}}, Options{Scenarios: family}, Quick)
	if len(r.Notes) > 0 || len(r.Figures) > 0 {
		t.Fatalf("notes %v, figures %v", r.Notes, r.Figures)
	}
	want := []Lack{
		{RWMutexScenario, "no reader/writer lock in this library"},
		{SemaphoreScenario, "it has locks only"},
		{OnceScenario, "no Once in this library"},
	}
	if !slices.Equal(r.Lacks, want) {
		t.Errorf("lacks %v, want %v", r.Lacks, want)
	}
}

// TestRenderLacks: a lacking library gets a column of "—" in the
// scenario's table and its reason under it; a library that did not run
// the scenario gets no column.
func TestRenderLacks(t *testing.T) {
	v := 2.0
	ours := &Report{Lib: "dsync", Options: Quick, Figures: []Figure{
		{Scenario: SemaphoreScenario, Param: "limit 2, one process", Metric: "Acquire(1)+Release(1) p50", Unit: "ms", Value: &v},
	}}
	theirs := &Report{Lib: "etcd", Lacks: []Lack{{SemaphoreScenario, "no semaphore in etcd's client"}}}
	absent := &Report{Lib: "redsync"}
	md := Render([]*Report{theirs, absent, ours}, "go test")
	for _, want := range []string{
		"| figure | dsync | etcd | dsync ÷ etcd |",
		"| limit 2, one process: Acquire(1)+Release(1) p50 (ms) | 2.00 | — | – |",
		"- etcd: no semaphore in etcd's client\n",
		"A semaphore of 2 units",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestMergeLacks: re-running a scenario replaces what a library lacked or
// measured of it, and keeps the other scenarios' figures and lacks.
func TestMergeLacks(t *testing.T) {
	v := 1.0
	old := &Report{Lib: "x",
		Figures: []Figure{
			{Scenario: SemaphoreScenario, Metric: "p50", Unit: "ms", Value: &v},
			{Scenario: Handoff, Metric: "p50", Unit: "ms", Value: &v},
		},
		Lacks: []Lack{{OnceScenario, "none"}, {RWMutexScenario, "none"}},
	}
	old.Merge(&Report{Lib: "x",
		Figures: []Figure{{Scenario: OnceScenario, Metric: "Do p50", Unit: "ms", Value: &v}},
		Lacks:   []Lack{{SemaphoreScenario, "gone"}},
	})
	var keys []string
	for _, f := range old.Figures {
		keys = append(keys, f.Scenario)
	}
	if !slices.Equal(keys, []string{Handoff, OnceScenario}) {
		t.Errorf("figures of %v, want handoff and once", keys)
	}
	want := []Lack{{RWMutexScenario, "none"}, {SemaphoreScenario, "gone"}}
	if !slices.Equal(old.Lacks, want) {
		t.Errorf("lacks %v, want %v", old.Lacks, want)
	}
}
