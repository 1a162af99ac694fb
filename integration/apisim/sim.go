// Package apisim is a simulation of dsync's public API: several simulated
// processes, each with a real dsync.Client and its Mutex, RWMutex,
// Semaphore, Once and leader.Election values, over one in-memory store
// (package dsync/driver/memory) that each process reaches through a
// faulty network of its own (store.go): requests slow, lost replies,
// requests held back that land after their senders gave up, gates held
// back until just after an emptying (stall.go), torn writes, the store
// unreachable or hanging for a process; processes paused,
// restarted and with their clocks stepped; the operator emptying the
// collections, and revoking sessions at any moment (revoke.go); and processes that disagree on their configuration (TTL,
// bucket span, idle age, semaphore limit). It runs in fake time
// (testing/synctest), one seed at a time, and checks what the processes
// saw through the API against one checker per promise of the package
// documentation (check.go and check_*.go). Each incarnation also reads
// who leads as watchers do (watch.go: Election.Leader and Observe, a
// Client's Queue, the status reader), and CheckWatch judges that what
// each watcher reports never goes back; its candidate proclaims values
// while it leads (election.go), so that Leader's reports of a term's
// values are judged too.
//
// The checkers need to know when a hold stopped being valid; the library
// does not say, and Lost() may be late (that is one of the promises
// checked). The stores tell an oracle instead: when each claim landed,
// and when each renewal of a session was sent and its reply came back,
// from which it derives each session's deadline by the documented rule
// (an upper bound of the library's own: see leaseLog.expiry).
//
// What it does not model: a pause freezes a process's requests, replies
// and its primitives' and elections' lease timers (their Client's Clock),
// not its goroutines, nor package leader's own timers; clock steps go
// forward only (a monotonic clock never goes back; a suspend it counts);
// backups restored; Fence. A step moves a process's Clock (its Clients'
// lease and waits) forward without the time passing, which no real clock
// does (clockcheck: never stepped; a suspend is counted as it passes):
// its local deadlines then come early in real time, so steps test only
// that a lease ended early is handled, never one trusted too long. The
// library's judgments in store time (session expiries, dead markers, a
// segment's coverage windows) read its engine's monotonic clock,
// the system clock, which steps do not move. The figures of a run say
// which faults it met; the planted bugs (planted_test.go, -tags
// dsync_planted) show that each checker catches what it is for.
//
// Code built on the API is simulated through Options.Actors (actor.go):
// the gocron Locker is, by contrib/gocron's locker_sim_test.go, a module
// of its own that this package cannot import, with its checker (one run
// per slot) and its planted bug there.
// leader.Partition is simulated so here (partition_sim.go, PartitionSim):
// members join, leave, crash and are paused, and CheckPartition
// (check_partition.go) judges one valid owner and increasing tokens per
// shard, and, in calm runs (Options.Calm), every shard owned and balanced
// after a change and the shards a change moves. Each incarnation also
// watches the partition as its users do (partition_watch.go: a
// Partition's View, polled, and its Observe), and checkPartitionWatch
// judges that one token of a shard names one owner in what each watcher
// reports.
//
// Outages of the whole store (outage.go, Options.Outages): every Client
// gets an outage grace, the store stops answering every process at once
// beside their own faults, half the Mutex holders and candidates take
// back what an outage took (relock.go), the oracle lets a session resume
// after its deadline (leaseLog.expiryAt) and judges expiry by the store's
// record of up-time as the library's outage rule does (creditedDead),
// and CheckOutage (check_outage.go) and, for a Partition,
// checkPartitionOutages judge the promises of ClientWithOutageGrace,
// Mutex.LockContext and Election.Campaign across an outage.
//
// Progress deadlines (progress.go): a worker now and then takes a Mutex,
// an RWMutex's write lock or a Semaphore's units with one
// (dsync.WithProgressDeadline), half the candidates and half the
// partition members lead and run shards with one, and their work
// reports progress, or stops and keeps working until told to stop.
// CheckProgress (check_progress.go) judges that a hold is stalled a
// deadline after its last report, never before, and, in calm runs, that
// the next waiter then holds soon; a stalled hold is valid until its
// stall for every other checker.
//
// Lock sets (sets.go, Options.Sets): workers lock lockset.Sets of
// Mutexes over a few keys, in any order, and grow them with LockMore,
// most of them detecting deadlocks; each member's hold is a Hold for
// every checker. The oracle keeps each Set claim's life in the store
// (set_claims.go); CheckSets (check_sets.go) judges all or nothing and
// that each deadlock broken was a cycle of waits at one instant, broken
// by its youngest Set, and CheckSetCycles (check_set_cycles.go) the
// cycles of waits the claims show: none among Locks, and, in calm runs,
// each broken within lockset's bound.
package apisim

import (
	"sync"
	"time"
)

// Options shape a run.
type Options struct {
	Procs    int           // processes (default 4)
	Workers  int           // workers per process (default 2), besides its candidate
	Duration time.Duration // fake time simulated (default 30 s)
	// Actors are operations of code built on the API (actor.go), which
	// the workers run beside the primitives'. Without them a seed runs
	// as it did before they existed.
	Actors []Actor
	// Calm spaces each process's faults (pauses, restarts, the store
	// unreachable or hanging, clock steps) four times as far apart, and
	// the network neither slows, holds back nor loses requests (it
	// still tears them), and the operator revokes nothing, so that spells free of faults are long enough
	// to judge what must happen within one (a partition's shards owned
	// and balanced): a seed's draws stay the same.
	Calm bool
	// Upgrade runs the rolling-upgrade actor (upgrade.go) beside the
	// rest.
	Upgrade bool
	// Outages gives every Client an outage grace (outageGrace) and the
	// store outages of every process at once beside the rest (outage.go);
	// half the Mutex holders and candidates take back what an outage
	// took from them (relock.go), and CheckOutage judges it. The spans
	// drawn are raised to outageSpan at least.
	Outages bool
	// Steady spares the processes their own faults (pauses, restarts,
	// cuts, clock steps), so that outages of the whole store come in
	// spells free of other changes (TestPartitionOutageSimulation).
	Steady bool
	// Sets has the workers lock lock sets too, half their operations
	// (sets.go), and CheckSets and CheckSetCycles judge them.
	Sets bool
}

// Report is one seed's run.
type Report struct {
	Seed       int64
	History    *History
	Figures    Figures
	Violations []Violation
	// Trace is the run's trace (trace.go), if it kept one.
	Trace []string
}

// Simulate simulates one seed. It must run in a testing/synctest bubble: it
// sleeps for the fake time it simulates.
func Simulate(seed int64, o Options) Report {
	w := debugWorld(seed, o)
	vs := append(Check(&w.hist), checkActors(w)...)
	vs = append(vs, CheckOutage(&w.hist)...)
	_, w.fig.SetCycles, w.fig.SetCyclesJudged = judgeSetCycles(&w.hist)
	w.fig.Seeds, w.fig.Violations = 1, len(vs)
	w.fig.FIFOPairs, w.fig.FIFOExempt = fifoPairs(&w.hist)
	w.fig.Observations = len(w.hist.Observations)
	for _, h := range w.hist.Holds {
		if !h.LostAt.IsZero() && (h.Ended.IsZero() || h.LostAt.Before(h.Ended)) {
			w.fig.Losses++
		}
	}
	for _, d := range w.hist.Dos {
		if d.Err == nil && d.Run != nil {
			w.fig.OnceWinners++
		}
	}
	r := Report{Seed: seed, History: &w.hist, Figures: w.fig, Violations: vs}
	if w.trace != nil {
		r.Trace = w.trace.lines
	}
	return r
}

// debugWorld runs a seed and returns its world.
func debugWorld(seed int64, o Options) *world {
	if o.Procs == 0 {
		o.Procs = 4
	}
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.Duration == 0 {
		o.Duration = 30 * time.Second
	}
	w := newWorld(seed)
	if o.Calm {
		// A calm run judges liveness (every shard owned soon after a
		// change): no requests slowed, lost or held back, and no revokes,
		// which take a member's shards away as a crash does.
		w.rates.slow, w.rates.lost, w.rates.heldBack = 0, 0, 0
		w.revokeRng = nil
	}
	w.actors = o.Actors
	w.sets = o.Sets
	w.hist.Calm = o.Calm
	members, closeMembers := newMembers()
	w.members = members
	cfgs := configs(w, o.Procs)
	if o.Outages {
		w.grace, w.hist.OutageGrace = outageGrace, outageGrace
		for i := range cfgs {
			cfgs[i].Span = max(cfgs[i].Span, outageSpan)
			if cfgs[i].Idle > 0 {
				cfgs[i].Idle = 4 * cfgs[i].Span
			}
		}
	}
	var maxTTL time.Duration
	for i, c := range cfgs {
		w.procs = append(w.procs, newProc(w, i, c))
		maxTTL = max(maxTTL, c.TTL)
		w.hist.TTLs = append(w.hist.TTLs, c.TTL)
		if c != cfgs[0] {
			w.fig.Disagreements++
		}
	}
	end := time.Now().Add(o.Duration)
	var drivers sync.WaitGroup
	if o.Upgrade {
		u := newUpgrader(w, o.Calm)
		drivers.Go(func() { u.drive(end) })
	}
	for _, p := range w.procs {
		drivers.Add(1)
		go func() {
			defer drivers.Done()
			p.live(o.Workers, end, o.Calm, o.Steady)
		}()
	}
	drivers.Add(1)
	go func() {
		defer drivers.Done()
		w.operate(end, maxTTL)
	}()
	drivers.Add(1)
	go func() {
		defer drivers.Done()
		w.revoker(end)
	}()
	if o.Outages {
		drivers.Go(func() { w.outages(end, maxTTL) })
	}
	drivers.Wait()
	w.inflight.Wait()
	closeMembers()
	w.finish()
	return w
}

// configs draws the processes' configurations: most seeds agree, others
// have processes disagree on TTL, idle age and semaphore limit, and a few
// on the bucket span (those refused with ErrSpan).
func configs(w *world, n int) []procConfig {
	draw := func() procConfig {
		c := procConfig{
			TTL:   []time.Duration{600 * time.Millisecond, time.Second, 1500 * time.Millisecond}[w.rand(0, 3)],
			Span:  4 * time.Second,
			Limit: 2 + int64(w.rand(0, 2)),
		}
		switch x := w.rand(0, 10); {
		case x < 2:
			c.Span = 8 * time.Second
		case x < 3:
			// At least the sweep lock's TTL (15 s): only then do the
			// sweeps compact (TestSweepWithShortSpan), in runs longer
			// than the idle age (-apisim.duration).
			c.Span = 16 * time.Second
		}
		if w.chance(0.4) {
			c.Idle = 4 * c.Span
		}
		return c
	}
	first := draw()
	cfgs := make([]procConfig, n)
	disagree, spans := w.chance(0.4), w.chance(0.1)
	for i := range cfgs {
		cfgs[i] = first
		if i > 0 && disagree {
			d := draw()
			d.Span = first.Span
			if d.Idle > 0 {
				d.Idle = 4 * d.Span
			}
			cfgs[i] = d
		}
		if i > 0 && spans && w.chance(0.5) {
			cfgs[i].Span = 12 * time.Second
			if cfgs[i].Idle > 0 {
				cfgs[i].Idle = 4 * cfgs[i].Span
			}
		}
	}
	return cfgs
}

// live runs process p until end: an incarnation after another, with the
// faults of its seed between.
func (p *proc) live(workers int, end time.Time, calm, steady bool) {
	w := p.w
	inc, err := p.start(workers)
	if err != nil {
		panic(err)
	}
	ttl := p.cfg.TTL
	for {
		gap := w.rand(500*time.Millisecond, 4*time.Second)
		if calm {
			gap *= 4
		}
		time.Sleep(gap)
		if !time.Now().Before(end) {
			break
		}
		var kinds []string
		for _, k := range []string{"unreachable", "hang", "pause", "step", "restart"} {
			if w.rates.procFaults[k] {
				kinds = append(kinds, k)
			}
		}
		if len(kinds) == 0 || steady {
			continue
		}
		switch kinds[w.rand(0, time.Duration(len(kinds)))] {
		case "unreachable":
			w.fault("unreachable")
			p.unreachable(w.rand(ttl/4, 3*ttl))
		case "hang":
			w.fault("hang")
			p.hangFor(w.rand(ttl/4, 3*ttl))
		case "pause":
			w.mu.Lock()
			w.fig.Pauses++
			w.mu.Unlock()
			p.pause(w.rand(ttl/10, 2*ttl))
		case "step":
			w.mu.Lock()
			w.fig.ClockSteps++
			w.mu.Unlock()
			p.step(w.rand(time.Millisecond, ttl))
		case "restart":
			w.mu.Lock()
			w.fig.Restarts++
			w.mu.Unlock()
			from := time.Now()
			inc.stop()
			time.Sleep(w.rand(0, ttl))
			if inc, err = p.start(workers); err != nil {
				panic(err)
			}
			w.faultWindow(p, "restart", from)
		}
	}
	inc.stop()
}

// operate is the operator: he empties the collections now and then
// (while nothing is held or awaited), and the sessions collection alone.
func (w *world) operate(end time.Time, maxTTL time.Duration) {
	if !w.rates.emptyings && !w.rates.sessEmptyings {
		return
	}
	for {
		stalled := w.operatorWait(w.rand(3*time.Second, 12*time.Second))
		if !time.Now().Before(end) {
			return
		}
		if stalled || w.rates.emptyings && (!w.rates.sessEmptyings || w.chance(0.5)) {
			w.empty(maxTTL)
		} else {
			w.emptySessions(maxTTL)
		}
	}
}

// finish gives each hold its deadline, by the oracle, and each Do the
// replies that carried its record; and the slack of Lost().
func (w *world) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.hist.Holds {
		p := w.procs[h.Proc]
		if l := p.leases[h.Session]; l != nil {
			h.Deadline = l.expiryAt(h.Start)
		}
		h.LostSlack = lostSlack
		h.Paused = p.pausedWithin(h.Deadline, h.Start)
		if resume := p.pausedAt(h.Deadline); !resume.IsZero() {
			h.LostSlack += resume.Sub(h.Deadline)
			h.PausedAtDeadline = true
		}
	}
	w.finishTerms()
	for _, r := range w.hist.Runs {
		if c, ok := w.procs[r.Proc].claimAt(claimKey{r.Key, r.Token}, r.Start); ok {
			if l := w.procs[r.Proc].leases[c.session]; l != nil {
				r.Deadline = l.expiryAt(r.Start)
			}
		}
	}
	w.countRevokedLosses()
	w.finishSets()
	for _, d := range w.hist.Dos {
		if d.Run == nil {
			continue
		}
		p := w.procs[d.Proc]
		k := claimKey{d.Key, d.Run.Token}
		d.Confirmed = p.dones[k]
		if c, ok := p.claimAt(k, d.Run.Start); ok {
			if l := p.leases[c.session]; l != nil {
				d.Deadline = l.expiryAt(d.Run.Start)
			}
		}
	}
}

// lostSlack is how late Lost() may close past the deadline in fake time:
// the library sends times to the store rounded to the millisecond, and
// its timers, in a synctest bubble, fire on time.
const lostSlack = 2 * time.Millisecond
