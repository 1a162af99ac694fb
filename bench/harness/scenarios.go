package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Scenario names, in the order they run and are reported.
const (
	Uncontended = "uncontended"
	Handoff     = "handoff"
	Failover    = "failover"
	Graceful    = "graceful"
	Idle        = "idle"
	Renewal     = "renewal"
	Throughput  = "throughput"
	Race        = "race"
	Scale       = "scale"
	// The rest of the sync family (family.go).
	RWMutexScenario   = "rwmutex"
	SemaphoreScenario = "semaphore"
	OnceScenario      = "once"
)

// AllScenarios lists every scenario.
var AllScenarios = []string{Uncontended, Handoff, Failover, Graceful, Idle, Renewal, Throughput, Race, Scale,
	RWMutexScenario, SemaphoreScenario, OnceScenario}

// Options sizes the scenarios. Zero values take Defaults' values.
type Options struct {
	Scenarios []string // nil: all
	Runs      int      // repeated runs of each figure

	Cycles       int           // uncontended: Lock+Unlock cycles per run
	Handoffs     int           // handoff, graceful: handoffs per run
	Waiters      []int         // handoff: waiting processes
	Candidates   []int         // graceful: waiting candidates
	HoldMin      time.Duration // handoff: a holder holds for a uniform random
	HoldMax      time.Duration //   time in [HoldMin, HoldMax]
	FailoverTTL  time.Duration // failover: lease TTL
	FailoverRuns int           // failover: kills per kind
	IdleWaiters  []int         // idle: waiting processes
	IdleWindow   time.Duration // idle: counting window per run
	// ServerPID, if set, is the process of the server the library under
	// test uses: idle reports its CPU while the processes wait (Linux).
	ServerPID      int
	RenewLocks     []int         // renewal: locks held by one process
	RenewTTL       time.Duration // renewal: lease TTL (renewed every TTL/3)
	RenewIntervals int           // renewal: intervals counted
	AcquireBudget  time.Duration // renewal: give up acquiring after this
	Procs          int           // throughput: processes
	ThroughputFor  time.Duration // throughput: duration of a run
	Contenders     int           // race: contenders per round
	Rounds         int           // race: rounds

	// scale (scale.go): idle keys in two namespaces (keys in the
	// collection, keys compacted), each grown in turn to each size (empty,
	// not nil: that part is not run), by ScaleLoaders Clients; a size
	// whose loading would take longer than ScaleLoadBudget is not
	// measured, nor the larger ones. At each size ScaleFresh fresh
	// Clients each make a first Lock+Unlock (no more once
	// ScaleFreshBudget is spent, at least 3), and a status page of
	// ScaleStatusLimit keys is timed, cut short after ScaleStatusTimeout.
	ScaleKeys          []int
	ScaleLoaders       int
	ScaleLoadBudget    time.Duration
	ScaleFresh         int
	ScaleFreshBudget   time.Duration
	ScaleFreshTimeout  time.Duration // one first Lock+Unlock is cut short after this
	ScaleStatusLimit   int
	ScaleStatusTimeout time.Duration
	// ScaleKeptMax, if above 0, is the largest size the series of keys in
	// the collection is grown to (the compacted series goes on alone):
	// loading runs at the pace of the server's commits, so that a run to
	// 100,000 keys in both series takes hours on FerretDB.
	ScaleKeptMax int
	// scale: a holder and each number of waiters; waiting Clients are
	// packed evenly into at most ScaleProcs processes; handoffs, then
	// counts over ScaleIdleWindow, ScaleRuns times each.
	ScaleWaiters    []int
	ScaleProcs      int
	ScaleIdleWindow time.Duration
	ScaleRuns       int

	// The family scenarios (family.go). rwmutex: each number of processes
	// takes and releases the read side of one reader/writer lock for
	// ThroughputFor per run. semaphore: Cycles uncontended Acquire(1) and
	// Release(1) of a semaphore of SemLimit units, then Handoffs of a
	// unit of the full semaphore with each number of waiting processes.
	// once: OnceProcs processes race Do on OnceRaces fresh keys per run;
	// then Cycles Do on a done key.
	Readers    []int
	SemLimit   int64
	SemWaiters []int
	OnceProcs  int
	OnceRaces  int

	Log io.Writer `json:"-"` // progress; nil: discard
}

// Defaults are the sizes run.sh uses: about six to eight minutes per
// library on two cores, the scale scenario 10 to 20 more, and the family
// scenarios a few more for each library that has their primitives.
var Defaults = Options{
	Runs:         3,
	Cycles:       200,
	Handoffs:     15,
	Waiters:      []int{1, 4, 16},
	Candidates:   []int{1},
	HoldMin:      30 * time.Millisecond,
	HoldMax:      230 * time.Millisecond,
	FailoverTTL:  2 * time.Second,
	FailoverRuns: 4,
	IdleWaiters:  []int{1, 16},
	// Longer than anything a waiter does periodically (dsync's safety
	// poll and its look at the holder's session are 15 s apart): a 5 s
	// window showed only the renewals.
	IdleWindow:     40 * time.Second,
	RenewLocks:     []int{1, 100, 10000},
	RenewTTL:       6 * time.Second,
	RenewIntervals: 4,
	// A new key's first Lock inserts its gates with the claim (issue 25):
	// 10,000 of them take about a minute on FerretDB.
	AcquireBudget: 2 * time.Minute,
	Procs:         4,
	ThroughputFor: 5 * time.Second,
	Contenders:    16,
	Rounds:        30,
	// -scale-keys 100,1000,10000,100000 adds 100,000 idle keys (with a
	// -scale-load-budget of hours): the loading slows as the collection
	// grows, 125 keys/s to 1,000 and 53 keys/s to 10,000 on FerretDB with
	// 4 Clients (more were slower) beside other work, and the 90,000 more
	// take about an hour in each of the two series.
	ScaleKeys:          []int{100, 1000, 10000},
	ScaleLoaders:       4,
	ScaleLoadBudget:    20 * time.Minute,
	ScaleFresh:         20,
	ScaleFreshBudget:   2 * time.Minute,
	ScaleFreshTimeout:  2 * time.Minute,
	ScaleStatusLimit:   100,
	ScaleStatusTimeout: 30 * time.Second,
	ScaleWaiters:       []int{1, 4, 16, 64},
	ScaleProcs:         16,
	// Longer than anything a waiter does periodically: before issue 25 a
	// waiter announced itself again every 105 s, and the waiters of a run,
	// which announce together when they start, all did so within one
	// window of 40 s seen only after it (which then showed no growth).
	ScaleIdleWindow: 2 * time.Minute,
	ScaleRuns:       1,

	Readers:    []int{1, 4},
	SemLimit:   2,
	SemWaiters: []int{1, 4},
	OnceProcs:  4,
	OnceRaces:  10,
}

// Quick are tiny sizes for checking that everything runs.
var Quick = Options{
	Runs:           1,
	Cycles:         5,
	Handoffs:       2,
	Waiters:        []int{1, 2},
	Candidates:     []int{1},
	HoldMin:        10 * time.Millisecond,
	HoldMax:        20 * time.Millisecond,
	FailoverTTL:    2 * time.Second,
	FailoverRuns:   1,
	IdleWaiters:    []int{1},
	IdleWindow:     500 * time.Millisecond,
	RenewLocks:     []int{1, 10},
	RenewTTL:       3 * time.Second,
	RenewIntervals: 1,
	AcquireBudget:  30 * time.Second,
	Procs:          2,
	ThroughputFor:  500 * time.Millisecond,
	Contenders:     4,
	Rounds:         3,

	ScaleKeys:          []int{10, 30},
	ScaleLoaders:       2,
	ScaleLoadBudget:    time.Minute,
	ScaleFresh:         3,
	ScaleFreshBudget:   30 * time.Second,
	ScaleFreshTimeout:  time.Minute,
	ScaleStatusLimit:   100,
	ScaleStatusTimeout: 10 * time.Second,
	ScaleWaiters:       []int{1, 3},
	ScaleProcs:         2,
	ScaleIdleWindow:    500 * time.Millisecond,
	ScaleRuns:          1,

	Readers:    []int{2},
	SemLimit:   2,
	SemWaiters: []int{1},
	OnceProcs:  2,
	OnceRaces:  2,
}

func (o Options) withDefaults(d Options) Options {
	def := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	defD := func(v *time.Duration, dv time.Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	defS := func(v *[]int, dv []int) {
		if *v == nil {
			*v = dv
		}
	}
	def(&o.Runs, d.Runs)
	def(&o.Cycles, d.Cycles)
	def(&o.Handoffs, d.Handoffs)
	defS(&o.Waiters, d.Waiters)
	defS(&o.Candidates, d.Candidates)
	defD(&o.HoldMin, d.HoldMin)
	defD(&o.HoldMax, d.HoldMax)
	defD(&o.FailoverTTL, d.FailoverTTL)
	def(&o.FailoverRuns, d.FailoverRuns)
	defS(&o.IdleWaiters, d.IdleWaiters)
	defD(&o.IdleWindow, d.IdleWindow)
	defS(&o.RenewLocks, d.RenewLocks)
	defD(&o.RenewTTL, d.RenewTTL)
	def(&o.RenewIntervals, d.RenewIntervals)
	defD(&o.AcquireBudget, d.AcquireBudget)
	def(&o.Procs, d.Procs)
	defD(&o.ThroughputFor, d.ThroughputFor)
	def(&o.Contenders, d.Contenders)
	def(&o.Rounds, d.Rounds)
	defS(&o.ScaleKeys, d.ScaleKeys)
	def(&o.ScaleLoaders, d.ScaleLoaders)
	defD(&o.ScaleLoadBudget, d.ScaleLoadBudget)
	def(&o.ScaleFresh, d.ScaleFresh)
	defD(&o.ScaleFreshBudget, d.ScaleFreshBudget)
	defD(&o.ScaleFreshTimeout, d.ScaleFreshTimeout)
	def(&o.ScaleStatusLimit, d.ScaleStatusLimit)
	defD(&o.ScaleStatusTimeout, d.ScaleStatusTimeout)
	defS(&o.ScaleWaiters, d.ScaleWaiters)
	def(&o.ScaleProcs, d.ScaleProcs)
	defD(&o.ScaleIdleWindow, d.ScaleIdleWindow)
	def(&o.ScaleRuns, d.ScaleRuns)
	defS(&o.Readers, d.Readers)
	if o.SemLimit == 0 {
		o.SemLimit = d.SemLimit
	}
	defS(&o.SemWaiters, d.SemWaiters)
	def(&o.OnceProcs, d.OnceProcs)
	def(&o.OnceRaces, d.OnceRaces)
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// runner runs the scenarios of one library.
type runner struct {
	d   Driver
	o   Options
	r   *Report
	seq int
	// dropLater, while the scale scenario runs, takes the namespaces it
	// drops at its end.
	dropLater func(ns string)
}

// Run runs the chosen scenarios against d and returns their figures. A
// scenario that fails records why and the others still run.
func Run(ctx context.Context, d Driver, o Options, base Options) *Report {
	o = o.withDefaults(base)
	start := time.Now()
	lib, server := d.Describe(ctx)
	rn := &runner{d: d, o: o, r: &Report{Lib: d.Name(), Library: lib, Server: server, Started: start.UTC().Truncate(time.Second), Machine: ThisMachine(), Options: o}}
	want := func(s string) bool { return o.Scenarios == nil || slices.Contains(o.Scenarios, s) }
	steps := []struct {
		name string
		f    func(context.Context) error
	}{
		{Uncontended, rn.uncontended},
		{Handoff, rn.handoffs},
		{Failover, rn.failovers},
		{Graceful, rn.graceful},
		{Idle, rn.idle},
		{Renewal, rn.renewal},
		{Throughput, rn.throughput},
		{Race, rn.race},
		{Scale, rn.scale},
		{RWMutexScenario, rn.rwmutex},
		{SemaphoreScenario, rn.semaphore},
		{OnceScenario, rn.once},
	}
	for _, s := range steps {
		if !want(s.name) {
			continue
		}
		t := time.Now()
		rn.logf("%s: %s ...", d.Name(), s.name)
		if err := s.f(ctx); err != nil {
			rn.logf("%s: %s failed: %v", d.Name(), s.name, err)
			rn.r.Notes = append(rn.r.Notes, fmt.Sprintf("%s: %v", s.name, err))
		}
		rn.logf("%s: %s done in %v", d.Name(), s.name, time.Since(t).Round(time.Millisecond))
	}
	rn.r.Took = Duration(time.Since(start))
	return rn.r
}

func (rn *runner) logf(format string, a ...any) {
	fmt.Fprintf(rn.o.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

// ns returns a fresh namespace for one scenario run.
func (rn *runner) ns(what string) string {
	rn.seq++
	return fmt.Sprintf("b%x_%s%d", time.Now().Unix()&0xfffff, what, rn.seq)
}

// drop removes what the processes of a run left in namespace ns.
func (rn *runner) drop(ctx context.Context, ns string) {
	c, err := rn.d.Connect(ctx, NewMeter(), ns)
	if err != nil {
		return
	}
	if dr, ok := c.(Dropper); ok {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = dr.Drop(dctx)
		cancel()
	}
	_ = c.Close()
}

func (rn *runner) connect(ctx context.Context, m *Meter, ns string) (Conn, func(), error) {
	c, err := rn.d.Connect(ctx, m, ns)
	if err != nil {
		return nil, nil, err
	}
	return c, func() {
		if dr, ok := c.(Dropper); ok {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_ = dr.Drop(dctx)
			cancel()
		}
		_ = c.Close()
	}, nil
}

// uncontended: one process locks and unlocks one key, nobody else does.
func (rn *runner) uncontended(ctx context.Context) error {
	m := NewMeter()
	before := m.Snapshot()
	conn, done, err := rn.connect(ctx, m, rn.ns("unc"))
	if err != nil {
		return err
	}
	defer done()
	l, err := conn.NewMutex("k", DefaultTTL)
	if err != nil {
		return err
	}
	if err := l.Lock(ctx); err != nil {
		return err
	}
	if err := l.Unlock(ctx); err != nil {
		return err
	}
	first := m.Snapshot().Sub(before)
	rn.r.add(Uncontended, "", "commands, connecting and the first Lock+Unlock (setup included)", "cmds", []float64{float64(first.Commands)}, "")
	st, err := rn.timedCycles(ctx, m, "uncontended", l.Lock, l.Unlock)
	if err != nil {
		return err
	}
	rn.r.add(Uncontended, "", "commands per Lock+Unlock (steady state)", "cmds", st.cmds, "")
	rn.r.add(Uncontended, "", "bytes on the wire per Lock+Unlock", "B", st.bytes, "")
	rn.r.add(Uncontended, "", "Lock+Unlock p50", "ms", st.p50, "")
	rn.r.add(Uncontended, "", "Lock+Unlock p99", "ms", st.p99, "")
	rn.r.add(Uncontended, "", "Lock p50", "ms", st.stepP50[0], "")
	rn.r.add(Uncontended, "", "Unlock p50", "ms", st.stepP50[1], "")
	return nil
}

// cycleStats are what timedCycles measured, one value per run.
type cycleStats struct {
	p50, p99    []float64   // of a whole cycle, ms
	stepP50     [][]float64 // [step][run], ms
	cmds, bytes []float64   // per cycle, as m counted them
}

// timedCycles runs a cycle of steps (Lock then Unlock, say) 10 times to
// warm up, then Cycles times in each of Runs runs, and returns each run's
// latencies and counts. what names the cycles in the log.
func (rn *runner) timedCycles(ctx context.Context, m *Meter, what string, steps ...func(context.Context) error) (cycleStats, error) {
	took := make([]int64, len(steps))
	cycle := func() error {
		for i, step := range steps {
			a := Mono()
			if err := step(ctx); err != nil {
				return err
			}
			took[i] = Mono() - a
		}
		return nil
	}
	for range 10 {
		if err := cycle(); err != nil {
			return cycleStats{}, err
		}
	}
	st := cycleStats{stepP50: make([][]float64, len(steps))}
	for run := range rn.o.Runs {
		s := m.Snapshot()
		var cyc []float64
		perStep := make([][]float64, len(steps))
		for range rn.o.Cycles {
			if err := cycle(); err != nil {
				return cycleStats{}, err
			}
			var sum int64
			for i, t := range took {
				sum += t
				perStep[i] = append(perStep[i], ms(t))
			}
			cyc = append(cyc, ms(sum))
		}
		c := m.Snapshot().Sub(s)
		n := float64(rn.o.Cycles)
		st.p50, st.p99 = append(st.p50, Percentile(cyc, 50)), append(st.p99, Percentile(cyc, 99))
		for i := range steps {
			st.stepP50[i] = append(st.stepP50[i], Percentile(perStep[i], 50))
		}
		st.cmds, st.bytes = append(st.cmds, float64(c.Commands)/n), append(st.bytes, float64(c.BytesOut+c.BytesIn)/n)
		rn.logf("%s: %s run %d: p50 %.2f ms, p99 %.2f ms, %.2f cmds/cycle", rn.d.Name(), what, run+1, st.p50[run], st.p99[run], st.cmds[run])
	}
	return st, nil
}

// chain runs handoffs among n+1 processes: one holds, n wait in Lock; the
// holder unlocks after a random hold, the process whose Lock returns holds
// next, and the former holder waits again. It returns the Unlock→Lock times
// in ms, and how many acquisitions happened while another process held.
func (rn *runner) chain(ctx context.Context, n, handoffs int, election bool) ([]float64, int, error) {
	ns := rn.ns("chain")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n+1, childSpec{NS: ns, Key: "k", Election: election, TTL: DefaultTTL})
	if err != nil {
		return nil, 0, err
	}
	defer g.close()
	const timeout = 2 * time.Minute
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, timeout); err != nil {
		return nil, 0, err
	}
	for i := 1; i <= n; i++ {
		g.send(i, "lock")
	}
	time.Sleep(time.Second) // let the waiters start waiting
	samples, doubles, _, err := rn.chainOn(ctx, g, 0, handoffs)
	return samples, doubles, err
}

// chainOn runs handoffs on g, whose Client holder holds and whose others
// wait in Lock. It returns the Unlock→Lock times in ms, how many
// acquisitions happened while another process held, and the Client that
// holds at the end.
func (rn *runner) chainOn(ctx context.Context, g *group, holder, handoffs int) ([]float64, int, int, error) {
	const timeout = 2 * time.Minute
	doubles := 0
	var samples []float64
	for range handoffs {
		time.Sleep(rn.o.HoldMin + rand.N(rn.o.HoldMax-rn.o.HoldMin+1))
		g.send(holder, "unlock")
		rel, err := g.wait(ctx, "releasing", holder, timeout)
		if err != nil {
			return samples, doubles, holder, err
		}
		// An acquisition reported before this release began happened
		// while holder held: two holders at once. That process unlocks
		// and waits again, so the chain goes on.
		for {
			early := -1
			for i, m := range g.pending {
				if m.kind == "acquired" && m.args[0] < rel.args[0] {
					early = i
					break
				}
			}
			if early < 0 {
				break
			}
			doubles++
			p := g.pending[early].proc
			g.pending = slices.Delete(g.pending, early, early+1)
			g.send(p, "unlock")
			if _, err := g.wait(ctx, "releasing", p, timeout); err != nil {
				return samples, doubles, holder, err
			}
			if _, err := g.wait(ctx, "released", p, timeout); err != nil {
				return samples, doubles, holder, err
			}
			g.send(p, "lock")
		}
		acq, err := g.wait(ctx, "acquired", -1, timeout)
		if err != nil {
			return samples, doubles, holder, err
		}
		if _, err := g.wait(ctx, "released", holder, timeout); err != nil {
			return samples, doubles, holder, err
		}
		samples = append(samples, ms(acq.args[0]-rel.args[0]))
		g.send(holder, "lock")
		holder = acq.proc
	}
	return samples, doubles, holder, nil
}

func (rn *runner) handoffs(ctx context.Context) error {
	err := rn.chains(ctx, Handoff, rn.o.Waiters, false, "waiting process", "Unlock→Lock")
	if p, ok := rn.d.(LatencyProber); ok {
		err = errors.Join(err, rn.probe(ctx, p))
	}
	return err
}

// probe adds the floor of a handoff: a round trip, and an event's delivery.
func (rn *runner) probe(ctx context.Context, p LatencyProber) error {
	const param, samples = "floor", 100
	var rtt, ev []float64
	for run := range rn.o.Runs {
		// The prober cleans up after itself: nothing of a lock library's
		// to drop.
		r, e, err := p.ProbeLatency(ctx, rn.ns("probe"), samples)
		if err != nil {
			rn.r.na(Handoff, param, "round trip p50", "ms", "failed: "+err.Error())
			return fmt.Errorf("probe: %w", err)
		}
		rtt = append(rtt, Percentile(r, 50))
		if len(e) > 0 {
			ev = append(ev, Percentile(e, 50))
		}
		rn.logf("%s: probe run %d: round trip p50 %.2f ms, event p50 %.1f ms", rn.d.Name(), run+1, rtt[run], Percentile(e, 50))
	}
	rn.r.add(Handoff, param, "round trip p50", "ms", rtt, "")
	if len(ev) > 0 {
		rn.r.add(Handoff, param, "wake-up event delivery p50", "ms", ev, "")
	}
	return nil
}

func (rn *runner) graceful(ctx context.Context) error {
	c, err := rn.d.Connect(ctx, NewMeter(), rn.ns("probe"))
	if err != nil {
		return err
	}
	_, ok := c.(Elections)
	_ = c.Close()
	if !ok {
		for _, n := range rn.o.Candidates {
			p := count(n, "waiting candidate")
			rn.r.na(Graceful, p, "Resign→Campaign p50", "ms", "no leader election in this library")
			rn.r.na(Graceful, p, "Resign→Campaign p99", "ms", "no leader election in this library")
		}
		return nil
	}
	return rn.chains(ctx, Graceful, rn.o.Candidates, true, "waiting candidate", "Resign→Campaign")
}

func (rn *runner) chains(ctx context.Context, scenario string, ns []int, election bool, what, metric string) error {
	var errs []error
	for _, n := range ns {
		param := count(n, what)
		var p50, p99 []float64
		doubles := 0
		var failed error
		for run := range rn.o.Runs {
			s, d, err := rn.chain(ctx, n, rn.o.Handoffs, election)
			doubles += d
			if err != nil {
				failed = err
				break
			}
			p50, p99 = append(p50, Percentile(s, 50)), append(p99, Percentile(s, 99))
			rn.logf("%s: %s %s run %d: p50 %.1f ms, p99 %.1f ms", rn.d.Name(), scenario, param, run+1, p50[run], p99[run])
		}
		note := ""
		if failed != nil {
			note = "failed: " + failed.Error()
			errs = append(errs, fmt.Errorf("%s: %w", param, failed))
		}
		if doubles > 0 {
			note = strings.TrimPrefix(note+fmt.Sprintf("; %s while another process held", count(doubles, "acquisition")), "; ")
		}
		rn.r.add(scenario, param, metric+" p50", "ms", p50, note)
		rn.r.add(scenario, param, metric+" p99", "ms", p99, note)
	}
	return errors.Join(errs...)
}

// failovers: the holder (leader) is killed with SIGKILL while a second
// process waits; the time until the waiter holds, as a multiple of the TTL.
func (rn *runner) failovers(ctx context.Context) error {
	var errs []error
	kinds := []bool{false}
	if c, err := rn.d.Connect(ctx, NewMeter(), rn.ns("probe")); err == nil {
		if _, ok := c.(Elections); ok {
			kinds = append(kinds, true)
		}
		_ = c.Close()
	}
	ttl := rn.o.FailoverTTL
	for _, election := range kinds {
		param := fmt.Sprintf("lock holder killed, TTL %v", ttl)
		if election {
			param = fmt.Sprintf("leader killed, TTL %v", ttl)
		}
		var ratios, msv []float64
		var failed error
		for run := range rn.o.FailoverRuns {
			v, err := rn.failover(ctx, election, ttl)
			if err != nil {
				failed = err
				break
			}
			ratios, msv = append(ratios, v/ms(int64(ttl))), append(msv, v)
			rn.logf("%s: failover (%s) run %d: %.0f ms = %.2f TTL", rn.d.Name(), param, run+1, v, v/ms(int64(ttl)))
		}
		note := ""
		if failed != nil {
			note = "failed: " + failed.Error()
			errs = append(errs, failed)
		}
		rn.r.add(Failover, param, "SIGKILL→next hold, median", "× TTL", ratios, note)
		rn.r.add(Failover, param, "SIGKILL→next hold, max", "× TTL", maxOf(ratios), note)
		rn.r.add(Failover, param, "SIGKILL→next hold, median", "ms", msv, note)
	}
	return errors.Join(errs...)
}

// count returns "1 thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "s") {
		return fmt.Sprintf("%d %ses", n, thing)
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func maxOf(xs []float64) []float64 {
	if len(xs) == 0 {
		return nil
	}
	return []float64{slices.Max(xs)}
}

func (rn *runner) failover(ctx context.Context, election bool, ttl time.Duration) (float64, error) {
	ns := rn.ns("fo")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, 2, childSpec{NS: ns, Key: "k", Election: election, TTL: ttl})
	if err != nil {
		return 0, err
	}
	defer g.close()
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, time.Minute); err != nil {
		return 0, err
	}
	g.send(1, "lock")
	// Kill at a random point of the holder's renewal cycle, after the
	// waiter has started waiting.
	time.Sleep(ttl/2 + rand.N(ttl))
	t0 := g.kill(0)
	acq, err := g.wait(ctx, "acquired", 1, 10*ttl+30*time.Second)
	if err != nil {
		return 0, err
	}
	return ms(acq.args[0] - t0), nil
}

// idle: one process holds the lock, n wait; what the waiters send.
func (rn *runner) idle(ctx context.Context) error {
	var errs []error
	for _, n := range rn.o.IdleWaiters {
		if err := rn.idleN(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("%d waiters: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func (rn *runner) idleN(ctx context.Context, n int) error {
	ns := rn.ns("idle")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n+1, childSpec{NS: ns, Key: "k", TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	g.send(0, "lock")
	if _, err := g.wait(ctx, "acquired", 0, time.Minute); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		g.send(i, "lock")
	}
	time.Sleep(2 * time.Second)
	stats := func() ([]msg, error) {
		out := make([]msg, n+1)
		for i := range n + 1 {
			g.send(i, "stats")
			m, err := g.wait(ctx, "stats", i, time.Minute)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		return out, nil
	}
	param := count(n, "waiting process")
	var total, per, bytes, serverCPU []float64
	var first, last []msg
	for run := range rn.o.Runs {
		a, err := stats()
		if err != nil {
			return err
		}
		if first == nil {
			first = a
		}
		cpu0, cpuOK := ProcessCPU(rn.o.ServerPID)
		time.Sleep(rn.o.IdleWindow)
		cpu1, cpuOK1 := ProcessCPU(rn.o.ServerPID)
		if cpuOK && cpuOK1 {
			serverCPU = append(serverCPU, 100*(cpu1-cpu0).Seconds()/rn.o.IdleWindow.Seconds())
		}
		b, err := stats()
		if err != nil {
			return err
		}
		rate := func(i, field int) float64 {
			secs := float64(b[i].args[0]-a[i].args[0]) / 1e9
			return float64(b[i].args[field]-a[i].args[field]) / secs
		}
		var sum, sumBytes float64
		for i := 1; i <= n; i++ {
			sum += rate(i, 1)
			sumBytes += rate(i, 2) + rate(i, 3)
		}
		total, per, bytes = append(total, sum), append(per, sum/float64(n)), append(bytes, sumBytes)
		last = b
		rn.logf("%s: idle %s run %d: %.2f cmds/s in all", rn.d.Name(), param, run+1, sum)
	}
	// The holder renews every few seconds: count it over all the runs.
	holder := []float64{float64(last[0].args[1]-first[0].args[1]) / (float64(last[0].args[0]-first[0].args[0]) / 1e9)}
	rn.r.add(Idle, param, "commands/s sent by the waiters, all together", "cmds/s", total, "")
	rn.r.add(Idle, param, "commands/s sent per waiter", "cmds/s", per, "")
	rn.r.add(Idle, param, "bytes/s on the wire, all waiters", "B/s", bytes, "")
	rn.r.add(Idle, param, fmt.Sprintf("commands/s sent by the holder (TTL %v), over all runs", DefaultTTL), "cmds/s", holder, "")
	if len(serverCPU) > 0 {
		rn.r.add(Idle, param, "CPU of the server process while they wait", "% of a core", serverCPU, "")
	}
	return nil
}

// renewal: one process holds many locks; what renewing them costs.
func (rn *runner) renewal(ctx context.Context) error {
	var errs []error
	for _, n := range rn.o.RenewLocks {
		if err := rn.renewN(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("%d locks: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func (rn *runner) renewN(ctx context.Context, n int) error {
	param := count(n, "lock")
	ttl := rn.o.RenewTTL
	interval := ttl / 3
	m := NewMeter()
	conn, done, err := rn.connect(ctx, m, rn.ns("renew"))
	if err != nil {
		return err
	}
	defer done()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%05d", i)
	}
	actx, cancel := context.WithTimeout(ctx, rn.o.AcquireBudget)
	defer cancel()
	names := map[string]bool{}
	if r, ok := conn.(Renewer); ok {
		for _, s := range r.RenewCommands() {
			names[s] = true
		}
	}
	m.Record()
	start := time.Now()
	var release func(context.Context) error
	var lostCount func() int
	if mh, ok := conn.(ManyHolder); ok {
		release, lostCount, err = mh.HoldMany(actx, keys, ttl)
	} else {
		release, lostCount, err = holdEach(actx, conn, keys, ttl)
	}
	took := time.Since(start)
	ev := m.Stop()
	if err != nil {
		why := fmt.Sprintf("gave up acquiring after %v: %v", took.Round(time.Second), err)
		if actx.Err() != nil {
			why = fmt.Sprintf("gave up: the budget for acquiring is %v; %v", rn.o.AcquireBudget, err)
		}
		if d := maxTook(ev, names); d > 0 {
			why += fmt.Sprintf("; meanwhile one renewal command took up to %v", d.Round(time.Millisecond))
		}
		rn.r.na(Renewal, param, "time to acquire them all", "s", why)
		for _, f := range []struct{ metric, unit string }{
			{"commands per renew interval", "cmds"}, {"bytes on the wire per renew interval", "B"},
			{"renew command p50", "ms"}, {"renew command p99", "ms"}, {"renewal time per interval (renew commands in flight)", "ms"},
		} {
			rn.r.na(Renewal, param, f.metric, f.unit, "")
		}
		return nil
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rn.o.AcquireBudget)
		defer cancel()
		_ = release(rctx)
	}()
	rn.r.add(Renewal, param, "time to acquire them all", "s", []float64{took.Seconds()}, "")
	time.Sleep(interval + interval/2)
	m.Record()
	a := m.Snapshot()
	time.Sleep(time.Duration(rn.o.RenewIntervals) * interval)
	c := m.Snapshot().Sub(a)
	ev = m.Stop()
	k := float64(rn.o.RenewIntervals)
	var lat []float64
	var spans [][2]int64
	failed := 0
	for _, e := range ev {
		if names[e.Name] {
			lat = append(lat, float64(e.Took)/1e6)
			spans = append(spans, [2]int64{e.At - int64(e.Took), e.At})
			if e.Failed {
				failed++
			}
		}
	}
	sum := busy(spans)
	var notes []string
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%d renew commands failed", failed))
	}
	if lost := lostCount(); lost > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d holds lost", lost, n))
	}
	note := strings.Join(notes, "; ")
	rn.r.add(Renewal, param, "commands per renew interval", "cmds", []float64{float64(c.Commands) / k}, note)
	rn.r.add(Renewal, param, "bytes on the wire per renew interval", "B", []float64{float64(c.BytesOut+c.BytesIn) / k}, note)
	rn.r.add(Renewal, param, "renew command p50", "ms", []float64{Percentile(lat, 50)}, note)
	rn.r.add(Renewal, param, "renew command p99", "ms", []float64{Percentile(lat, 99)}, note)
	rn.r.add(Renewal, param, "renewal time per interval (renew commands in flight)", "ms", []float64{ms(sum) / k}, note)
	rn.logf("%s: renewal %s: acquired in %v; %.1f cmds, %.0f B per interval; renew p50 %.2f ms", rn.d.Name(), param,
		took.Round(time.Millisecond), float64(c.Commands)/k, float64(c.BytesOut+c.BytesIn)/k, Percentile(lat, 50))
	return nil
}

// busy returns how long at least one of spans was under way.
func busy(spans [][2]int64) int64 {
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var total, end int64
	for i, s := range spans {
		if i == 0 || s[0] > end {
			total += s[1] - s[0]
			end = s[1]
		} else if s[1] > end {
			total += s[1] - end
			end = s[1]
		}
	}
	return total
}

func maxTook(ev []Event, names map[string]bool) time.Duration {
	var d time.Duration
	for _, e := range ev {
		if names[e.Name] {
			d = max(d, e.Took)
		}
	}
	return d
}

// holdEach locks every key with a Locker of its own, eight at a time. It
// returns how to release them and how to count those lost meanwhile.
func holdEach(ctx context.Context, conn Conn, keys []string, ttl time.Duration) (func(context.Context) error, func() int, error) {
	lockers := make([]Locker, len(keys))
	for i, k := range keys {
		l, err := conn.NewMutex(k, ttl)
		if err != nil {
			return nil, nil, err
		}
		lockers[i] = l
	}
	lost := func() int {
		n := 0
		for _, l := range lockers {
			if lr, ok := l.(LostReporter); ok && lr.Lost() {
				n++
			}
		}
		return n
	}
	held := make([]bool, len(keys))
	release := func(ctx context.Context) error {
		var mu sync.Mutex
		var errs []error
		next := make(chan int)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if err := lockers[i].Unlock(ctx); err != nil {
						mu.Lock()
						if len(errs) < 3 {
							errs = append(errs, err)
						}
						mu.Unlock()
					}
				}
			}()
		}
		for i := range lockers {
			if held[i] {
				next <- i
			}
		}
		close(next)
		wg.Wait()
		return errors.Join(errs...)
	}
	var mu sync.Mutex
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				err := lockers[i].Lock(ctx)
				mu.Lock()
				if err == nil {
					held[i] = true
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range keys {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		n := 0
		for _, h := range held {
			if h {
				n++
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = release(rctx)
		return nil, nil, fmt.Errorf("%d of %d locks acquired: %w", n, len(keys), firstErr)
	}
	return release, lost, nil
}

// throughput: procs processes lock and unlock one key as fast as they can.
func (rn *runner) throughput(ctx context.Context) error {
	n := rn.o.Procs
	ns := rn.ns("tput")
	defer rn.drop(ctx, ns)
	g, err := spawn(ctx, n, childSpec{NS: ns, Key: "k", TTL: DefaultTTL})
	if err != nil {
		return err
	}
	defer g.close()
	param := count(n, "process") + ", one key"
	var rates, jain, maxShare, minShare []float64
	for run := range rn.o.Runs {
		counts, _, err := rn.loops(ctx, g, n)
		if err != nil {
			return err
		}
		var total float64
		for _, c := range counts {
			total += c
		}
		rates = append(rates, total/rn.o.ThroughputFor.Seconds())
		jain = append(jain, Jain(counts))
		maxShare = append(maxShare, slices.Max(counts)/total)
		minShare = append(minShare, slices.Min(counts)/total)
		rn.logf("%s: throughput run %d: %.1f holds/s, split %v", rn.d.Name(), run+1, rates[run], counts)
	}
	rn.r.add(Throughput, param, "holds/s, all processes", "holds/s", rates, "")
	rn.r.add(Throughput, param, "Jain fairness index (1 = equal split)", "", jain, "")
	rn.r.add(Throughput, param, "largest share of the holds", "%", pct(maxShare), "")
	rn.r.add(Throughput, param, "smallest share of the holds", "%", pct(minShare), "")
	return nil
}

func pct(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = 100 * x
	}
	return out
}

// race: contenders with a connection each try once, at the same moment, to
// take a free lock; more than one winner in a round is two holders at once.
func (rn *runner) race(ctx context.Context) error {
	n := rn.o.Contenders
	ns := rn.ns("race")
	var lockers []Locker
	for i := range n {
		conn, done, err := rn.connect(ctx, NewMeter(), ns)
		if err != nil {
			return err
		}
		defer done()
		// Warm the connection and whatever the library sets up once.
		w, err := conn.NewMutex(fmt.Sprintf("warm%d", i), DefaultTTL)
		if err != nil {
			return err
		}
		if err := w.Lock(ctx); err != nil {
			return err
		}
		if err := w.Unlock(ctx); err != nil {
			return err
		}
		l, err := conn.NewMutex("k", DefaultTTL)
		if err != nil {
			return err
		}
		if _, ok := l.(TryLocker); !ok {
			rn.r.na(Race, "", "rounds with more than one holder", "rounds", "no single-attempt lock in this library")
			return nil
		}
		lockers = append(lockers, l)
	}
	if err := lockers[0].Lock(ctx); err != nil {
		return err
	}
	if err := lockers[0].Unlock(ctx); err != nil {
		return err
	}
	param := fmt.Sprintf("%s, %s", count(n, "contender"), count(rn.o.Rounds, "round"))
	bad, most, errs := 0, 0, 0
	var lastErr error
	for round := range rn.o.Rounds {
		won := make([]bool, n)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		var mu sync.Mutex
		for i, l := range lockers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				ok, err := l.(TryLocker).TryLock(ctx)
				won[i] = ok
				if err != nil {
					mu.Lock()
					errs++
					lastErr = err
					mu.Unlock()
				}
			}()
		}
		time.Sleep(10 * time.Millisecond)
		close(gate)
		wg.Wait()
		winners := 0
		for i, ok := range won {
			if ok {
				winners++
				_ = lockers[i].Unlock(ctx)
			}
		}
		if winners > 1 {
			bad++
		}
		most = max(most, winners)
		rn.logf("%s: race round %d: %d holders", rn.d.Name(), round+1, winners)
		time.Sleep(20 * time.Millisecond)
	}
	note := ""
	if errs > 0 {
		note = fmt.Sprintf("%d attempts failed with errors, last: %v", errs, lastErr)
	}
	rn.r.add(Race, param, "rounds with more than one holder", "rounds", []float64{float64(bad)}, note)
	rn.r.add(Race, param, "most holders in one round", "holders", []float64{float64(most)}, note)
	return nil
}
