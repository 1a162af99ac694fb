package queue_test

import (
	"container/heap"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// The simulation runs the protocol of several owners (processes) against
// one store on virtual time, one step at a time in an order drawn from a
// seed, so a failing seed replays exactly (go test -run TestSimulation
// -queue.seed=N). What it models, file by file:
//
//   - simnet_test.go: the network and the server. Every request reaches
//     the store after a random delay and its reply comes back after
//     another, so requests of one owner overtake each other; a few are
//     held back far longer than the caller waits (the caller sees an
//     unknown outcome, the request is applied late). Updates and deletes
//     are torn the way FerretDB's are: read on arrival, written (or
//     deleted by ID) a delay later. Opening a session deletes the sessions
//     that expired long ago (the sessions cleaner).
//   - simowner_test.go: an owner is an engine with a session kept by a
//     queue.Lease (the dsync keeper's rules: renewals, late confirmations,
//     deadlines), one to three workers that claim keys (several claims per
//     engine, sharing its caches), and observers. Each owner's clock
//     drifts; its server-time estimate is a sample widened by the drift
//     and the member skew, re-sampled now and then. Its timers count time
//     the machine spends suspended.
//   - simwatch_test.go: beside each observer, a reader that reads the
//     queue as a dsync Client's Queue does (with its memory of the
//     sessions it found expired).
//   - simworld_test.go: faults. Crashes, pauses (SIGSTOP), suspends that
//     end near a deadline, failovers that step the server's clock within
//     the member skew, and the store emptied, its sessions dropped, or a
//     backup restored, while no lock is held. The sessions are also
//     dropped under holders, and on half the seeds a drop comes with an
//     insert of a later generation of a holder's session held back until
//     just after it, the holder paused (heldSession). On half the seeds one
//     owner's link holds its gate inserts back (most land after their
//     sender gave up on them) while its renewals go through, so that it
//     holds on a gate it could not extend while others start segments.
//   - simstall_test.go: on half the seeds, a start or a refresh's gate is
//     now and then held back on a stalled link until just after an
//     emptying, which follows once the workers go quiet.
//   - simslow_test.go: on a quarter of the seeds, a weighted key whose
//     waiters look only every 1.5 to 3 s and whose holds are often long,
//     so that a waiter's look finds claims it passed below the floor
//     (dropBelowFloor).
//   - simspan_test.go: on an eighth of the seeds, the store emptied twice
//     in a row, with a process of a longer bucket span starting a key's
//     segment between, so that a start after the second emptying can
//     take that segment's number while the longer-span process still
//     knows it (claimOfHistory).
//   - simstuck_test.go: on half the seeds, a hold now and then stalls
//     (a progress deadline ran out): its worker stops relying on it, its
//     claim is released the margin later while its session renews for
//     the others, and it claims the key again at once in the same
//     session; the release is held back until that later claim landed.
//   - simoutage_test.go: TestSimulationOutage, a seed stream of its own:
//     every engine with an outage grace, the store keeping the record of
//     up-time, and one to three store-wide outages of 0.2 to 5 TTLs per
//     run (requests dropped or held until the end, replies lost), a
//     holder crashed in half of them; its checker holds waiters to the
//     outage's credit (no dead marker before the record can prove one).
//   - simresume_test.go: on those seeds, owners suspend their sessions at
//     their deadline and resume them after the resume check (the same
//     claims and tokens) or retire them and mark their claims dead; a
//     resumed hold's validity spans its suspension in the history, and
//     each resumed claim is checked in the store.
//
// Each seed's history goes through integration/history's checker, with
// the resets marked (tokens compared across emptyings too), and the owners' renewals through a storm check;
// planted protocol errors (queue.Bug, and the simulation's own for what
// it models outside the engine) must be caught.

var (
	simSeeds = flag.Int("queue.seeds", 0, "simulation seeds to run (default 150; with DSYNC_LONG=1, 2000, or 300 with -race)")
	simSeed  = flag.Int64("queue.seed", -1, "run only this simulation seed, verbosely")
)

const (
	simTTL      = time.Second
	simInterval = simTTL / 3
	simMargin   = simTTL / 20
	simTimeout  = 300 * time.Millisecond // how long a caller waits for a reply
	simPoll     = 100 * time.Millisecond
	simLength   = 20 * time.Second
	// simSkew is the member skew: a failover steps the server's clock by
	// up to this much, and every estimate is widened by it.
	simSkew = 200 * time.Millisecond
	// simDrift bounds how fast an owner's clock drifts from true time.
	simDrift = 0.005
	// simRetention: the sessions cleaner deletes sessions expired longer
	// ago than this.
	simRetention = 3 * simTTL
	// simTimerStep is how often, in awake time, a timer facility that
	// counts only awake time checks for suspends (the planted bug).
	simTimerStep = 200 * time.Millisecond
	// simMaxRenewals bounds the renewals of one session within any TTL:
	// three per TTL normally, a quarter interval apart after failures.
	simMaxRenewals = 16
	// simSpan is the bucket of store time, and simIdle the age after
	// which the sweepers compact a key: keyIdle ("k3") is used only in
	// two phases far enough apart for it to be compacted in between.
	simSpan    = time.Second
	simIdle    = 4 * simSpan
	keyIdle    = "k3"
	simPhase1  = 4 * time.Second
	simPhase2  = 15 * time.Second
	simSweepAt = 2 * simSpan
	// simEmptyingGap: tokens after an emptying lie above those of holds
	// begun more than this before it. A token inserted at true time s is
	// below base(L + Margin), L being at most s plus the server clock's
	// offset (half the skew), the estimate's error and skew, and drift:
	// about s + 0.36 s; a segment started after the emptying, at t, has
	// base(E) with E at least t − 0.46 s. So t − s ≥ 1.02 s suffices.
	simEmptyingGap = 1200 * time.Millisecond
)

func simConfig() queue.Config {
	return queue.Config{
		ViewTrust:     100 * time.Millisecond,
		AcquireWindow: 200 * time.Millisecond,
		PruneDelay:    700 * time.Millisecond,
		Span:          simSpan,
		Quantum:       100 * time.Millisecond,
		Rate:          4,
		Margin:        simSkew,
	}
}

// simBug plants an error in what the simulation models outside the
// engine, for the negative controls.
type simBug int

const (
	simNoBug simBug = iota
	// simBugAwakeTimers: timers count awake time only, and a watcher
	// re-arms them every simTimerStep after a suspend.
	simBugAwakeTimers
	// simBugNarrowEstimate: the server-time estimate is the sample plus
	// the local time elapsed, with no error, drift or member skew.
	simBugNarrowEstimate
	// simBugCompactForgetsDone: compaction deletes the done records of
	// the keys it compacts, expired or not.
	simBugCompactForgetsDone
	// simBugCompactDoneByID: compaction deletes the done records past
	// their expiry by ID, a delay after reading them, whatever holds the
	// ID then (a record a Do inserted again meanwhile).
	simBugCompactDoneByID
)

// simStats counts what a run exercised, so the test can show that the hard
// paths ran.
type simStats struct {
	late, prunes, dead, withdrawn, sessionsLost int
	starts, orphans, compactions, lapses        int // segments started, starts that met a gate, keys compacted, claims given up as their segment lapsed
	revivals                                    int // holds of keyIdle after a compaction of it
	torn                                        int // renewals whose write lowered a session's expiry
	tornDeletes, cleaned                        int
	lateConfirms, suspends, nearDeadline        int
	failovers, resets, restores, sessionDrops   int
	storeResets                                 int // ErrReset seen by claims
	onceLags, doneKept                          int // once workers' Dos of old slots, and their reads that found the record of a compacted key
	slowGates                                   int // gate inserts held back on an owner's slow link
	drops                                       int // keys' knowledge dropped by owners with a bound of one key (Config.MaxKeys)
	doneForgotten, doneSpared                   int // done records compacted past their expiry, and records inserted again that a compaction's late delete spared
	heldSessions                                int // drops with a session insert held back across them (simHeld)
	floorDrops                                  int // passed claims weighted waiters dropped below a floor (simslow_test.go)
	stalled, stalledAfterEmpty, stalledCovering int // requests held back (simstall_test.go), landed just after an emptying, and gates among them still covering
	twice, twiceMet                             int // double emptyings (simspan_test.go), and starts after them that took the number of the segment started in between
	stuck, stuckLate                            int // holds stalled (simstuck_test.go), and their releases that landed after the same session's later claim of the key
	outages, outageDropped, outageHeld          int // store-wide outages (simoutage_test.go), and the requests they dropped and held
	outageCrashes, creditChecked                int // holders crashed in an outage, and dead markers the outage's credit checker checked
	ownerSuspends, resumes, resumeDead          int // sessions suspended at their deadline, resumed, and found dead by their check (simresume_test.go)
	resumeGiveUps                               int // suspended sessions given up
	holdsSuspended, holdsResumed                int // holds suspended with their sessions, and resumed
	holdsFoundDead, holdsGivenUp                int // holds whose sessions' checks found dead, or were given up
	branched                                    int // calls that made requests side by side, more than one (net.Branch)
}

func (a *simStats) add(b simStats) {
	a.late += b.late
	a.slowGates += b.slowGates
	a.drops += b.drops
	a.floorDrops += b.floorDrops
	a.doneForgotten += b.doneForgotten
	a.doneSpared += b.doneSpared
	a.stalled += b.stalled
	a.stalledAfterEmpty += b.stalledAfterEmpty
	a.stalledCovering += b.stalledCovering
	a.prunes += b.prunes
	a.dead += b.dead
	a.withdrawn += b.withdrawn
	a.sessionsLost += b.sessionsLost
	a.torn += b.torn
	a.tornDeletes += b.tornDeletes
	a.cleaned += b.cleaned
	a.lateConfirms += b.lateConfirms
	a.suspends += b.suspends
	a.nearDeadline += b.nearDeadline
	a.failovers += b.failovers
	a.resets += b.resets
	a.restores += b.restores
	a.sessionDrops += b.sessionDrops
	a.storeResets += b.storeResets
	a.starts += b.starts
	a.orphans += b.orphans
	a.compactions += b.compactions
	a.lapses += b.lapses
	a.revivals += b.revivals
	a.onceLags += b.onceLags
	a.doneKept += b.doneKept
	a.heldSessions += b.heldSessions
	a.stuck += b.stuck
	a.stuckLate += b.stuckLate
	a.twice += b.twice
	a.twiceMet += b.twiceMet
	a.outages += b.outages
	a.outageDropped += b.outageDropped
	a.outageHeld += b.outageHeld
	a.outageCrashes += b.outageCrashes
	a.creditChecked += b.creditChecked
	a.ownerSuspends += b.ownerSuspends
	a.resumes += b.resumes
	a.branched += b.branched
	a.resumeDead += b.resumeDead
	a.resumeGiveUps += b.resumeGiveUps
	a.holdsSuspended += b.holdsSuspended
	a.holdsResumed += b.holdsResumed
	a.holdsFoundDead += b.holdsFoundDead
	a.holdsGivenUp += b.holdsGivenUp
}

type simEvent struct {
	at  time.Duration
	seq int
	fn  func()
}

type eventHeap []*simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type sim struct {
	seed int64
	// readDead is what each owner's reader found expired, and
	// readBack the readers' reads that found such a claim live again
	// (simwatch_test.go).
	readDead map[readOf]readDead
	readBack []string
	// otherSpan is the pid of the owner that runs another bucket span
	// (0: none), otherSpanLen that span (0: twice simSpan).
	otherSpan    int
	otherSpanLen time.Duration
	// twice is the double emptying (nil: not on this seed;
	// simspan_test.go).
	twice  *simTwice
	rng    *rand.Rand
	now    time.Duration // true time
	q      eventHeap
	seq    int
	yield  chan struct{}
	server *server
	t0     time.Time
	log    []history.Event
	actors []*actor
	owners []*owner
	ids    int
	bug    queue.Bug
	sbug   simBug
	lateP  float64
	stats  simStats
	trace  func(string, ...any)
	// storms are renewal storms found (see checkStorms).
	storms []string
	keys   []string
	// families: how each key's claims share it; frng draws them, and
	// the terms of claims.
	families map[string]family
	frng     *rand.Rand
	// limits draws the limits of weighted claims (simfamily_test.go).
	limits simLimits
	// slow: whether the weighted key's waiters look rarely
	// (simslow_test.go).
	slow simSlow
	// stuck: the stuck workers (simstuck_test.go).
	stuck *simStuck
	// once: whether owners run once workers (simonce_test.go).
	once *simOnce
	// compacted: keys a sweep compacted.
	compacted map[string]bool
	// slowGates is the owner whose gate inserts are mostly held back
	// (nil: none), drawn with grng, a stream of its own.
	slowGates *owner
	grng      *rand.Rand
	// drops are the times the sessions are dropped (scheduleFaults, and
	// the heldSession fault); held is that fault (nil: not on this seed).
	drops []time.Duration
	held  *simHeld
	// lrng draws the requests the stalled link holds back (nil: none on
	// this seed; simstall_test.go).
	lrng *rand.Rand
	// quietFrom and quietUntil: workers claim nothing in between, so that
	// the emptying a held request waits for can come (simstall_test.go).
	quietFrom, quietUntil time.Duration
	// outage: the store-wide outages (nil: not an outage seed;
	// simoutage_test.go).
	outage *simOutage
}

// simOpts selects what a run models beyond a seed's draws.
type simOpts struct {
	// outage: store-wide outages, every engine with an outage grace
	// (simoutage_test.go).
	outage bool
}

// A family is the kind of primitive a key serves, which decides the terms
// of its claims.
type family int

const (
	familyExclusive family = iota // a Mutex
	familyRW                      // an RWMutex: readers share, writers exclude
	familyWeighted                // a Semaphore
)

// simLimit is the limit of a weighted key; claims weigh 1 or 2.
const simLimit = 3

// terms draws the terms of a claim of key, and the mode its hold is
// recorded with.
func (s *sim) terms(key string) (queue.Terms, string) {
	switch s.families[key] {
	case familyRW:
		if s.frng.Float64() < 0.7 {
			return queue.Terms{Mode: queue.Shared}, history.ModeShared
		}
	case familyWeighted:
		return queue.Terms{Mode: queue.Weighted, Weight: 1 + s.frng.Int64N(2), Limit: s.limits.draw()}, history.ModeWeighted
	}
	return queue.ExclusiveTerms, ""
}

// addOwner starts a process: its keeper, one to three workers, its
// sampler, and an observer and a reader if asked.
func (s *sim) addOwner(observes bool) *owner {
	o := newOwner(s, len(s.owners)+1)
	s.owners = append(s.owners, o)
	s.spawn(o, o.keeper)
	s.spawn(o, o.sampler)
	for range 1 + s.rng.IntN(3) {
		s.spawn(o, func(a *actor) { o.worker(a, s.keys) })
	}
	if observes {
		s.spawn(o, func(a *actor) { o.observer(a, s.keys) })
		s.spawnReader(o)
	}
	s.spawnOnce(o)
	return o
}

func (s *sim) tracef(format string, args ...any) {
	if s.trace != nil {
		s.trace(format, args...)
	}
}

func (s *sim) at(at time.Duration, fn func()) {
	heap.Push(&s.q, &simEvent{at: at, seq: s.seq, fn: fn})
	s.seq++
}

// An actor is one goroutine of an owner. Only one actor runs at a time:
// the scheduler steps it, and it yields back when it blocks.
type actor struct {
	s      *sim
	o      *owner
	resume chan struct{}
	done   bool
	// rng, if not nil, draws the delays of the actor's requests, which
	// are not counted in flight: a reader's (simwatch_test.go), which
	// only reads and must not move the world's draws.
	rng *rand.Rand
}

func (s *sim) spawn(o *owner, body func(a *actor)) {
	s.spawnActor(&actor{s: s, o: o, resume: make(chan struct{})}, body)
}

// spawnActor starts a, which runs body when the scheduler first steps it.
func (s *sim) spawnActor(a *actor, body func(a *actor)) {
	o := a.o
	s.actors = append(s.actors, a)
	go func() {
		defer func() {
			a.done = true
			s.yield <- struct{}{}
		}()
		<-a.resume
		if !o.crashed {
			body(a)
		}
	}()
	s.at(s.now, func() { s.step(a) })
}

// step runs a until it blocks; an actor of a stopped owner runs once the
// owner runs again.
func (s *sim) step(a *actor) {
	if a.done {
		return
	}
	if until := a.o.stoppedUntil(); until > s.now {
		s.at(until, func() { s.step(a) })
		return
	}
	a.resume <- struct{}{}
	<-s.yield
}

// block parks the actor until the scheduler steps it again. An actor whose
// owner crashed meanwhile ends there.
func (a *actor) block() {
	a.s.yield <- struct{}{}
	<-a.resume
	if a.o.crashed {
		runtime.Goexit()
	}
}

// sleep parks the actor for d of true time.
func (a *actor) sleep(d time.Duration) {
	a.s.at(a.s.now+max(d, time.Microsecond), func() { a.s.step(a) })
	a.block()
}

// runSim runs one seed and returns the checker's report and what ran.
func runSim(t *testing.T, seed int64, bug queue.Bug, sbug simBug, verbose bool) (*history.Report, simStats) {
	t.Helper()
	return runSimOpts(t, seed, bug, sbug, verbose, simOpts{})
}

// runSimOpts is runSim modelling what opts selects.
func runSimOpts(t *testing.T, seed int64, bug queue.Bug, sbug simBug, verbose bool, opts simOpts) (*history.Report, simStats) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	s := &sim{
		seed:      seed,
		readDead:  map[readOf]readDead{},
		rng:       rng,
		now:       time.Second,
		yield:     make(chan struct{}),
		t0:        time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		bug:       bug,
		sbug:      sbug,
		lateP:     []float64{0, 0.01, 0.03, 0.08}[rng.IntN(4)],
		compacted: map[string]bool{},
	}
	s.server = newServer(s)
	if opts.outage {
		s.outage = newSimOutage(seed)
		s.outage.schedule(s)
	}
	if verbose {
		s.trace = func(f string, args ...any) { t.Logf("%v "+f, append([]any{s.now}, args...)...) }
	}
	s.frng = rand.New(rand.NewPCG(uint64(seed), 0xfa111e5))
	s.keys = []string{"k1", "k2"}[:1+rng.IntN(2)]
	if s.frng.Float64() < 0.5 {
		s.keys = append(s.keys, keyIdle)
	}
	// Families and terms draw from a stream of their own, so that a
	// seed whose keys are all exclusive runs as it did before keys had
	// families. k1 is always a Mutex's.
	s.families = map[string]family{"k1": familyExclusive, "k2": family(s.frng.IntN(3)), keyIdle: familyExclusive}
	s.limits = newSimLimits(seed)
	s.once = newSimOnce(seed)
	s.slow = newSimSlow(seed)
	if s.slow.rng != nil {
		// A weighted key for the slow waiters.
		s.families["k2"] = familyWeighted
		if !slices.Contains(s.keys, "k2") {
			s.keys = append(s.keys, "k2")
		}
	}
	// In a quarter of the runs one of the first three owners runs another
	// bucket span, drawn from a stream of its own so that the other runs
	// go as they did before.
	if srng := rand.New(rand.NewPCG(uint64(seed), 0x5ba17)); srng.IntN(4) == 0 {
		s.otherSpan = 1 + srng.IntN(3)
	}
	s.twice = newSimTwice(seed)
	s.stuck = newSimStuck(seed)
	for i := range 3 + rng.IntN(4) {
		o := s.addOwner(i < 2)
		if i < 2 {
			s.spawn(o, o.sweeper)
		}
	}
	s.grng = rand.New(rand.NewPCG(uint64(seed), 0x9a7e5))
	if s.grng.Float64() < 0.5 {
		s.slowGates = s.owners[s.grng.IntN(len(s.owners))]
	}
	if lrng := rand.New(rand.NewPCG(uint64(seed), 0x4e1d)); lrng.Float64() < 0.5 {
		s.lrng = lrng
	}
	s.scheduleFaults()
	if lrng := rand.New(rand.NewPCG(uint64(seed), 0x4e1d5e55)); lrng.Float64() < 0.5 {
		s.held = &simHeld{rng: lrng}
	}
	if s.twice != nil {
		s.twice.schedule(s)
	}
	for s.q.Len() > 0 {
		ev := heap.Pop(&s.q).(*simEvent)
		if ev.at > simLength+5*simTTL {
			break
		}
		s.now = ev.at
		ev.fn()
	}
	// Stop every actor still parked.
	for _, o := range s.owners {
		s.stats.drops += int(o.eng.Drops())
		s.stats.floorDrops += int(o.eng.FloorDrops())
		o.crashed = true
		o.pausedUntil, o.suspendedUntil = 0, 0
	}
	for _, a := range s.actors {
		s.step(a)
	}
	if verbose {
		for _, ev := range s.log {
			t.Logf("%s %s %s#%d t=%v dl=%v lost=%v", ev.Ev, ev.Owner, ev.Key, ev.Token, time.Duration(ev.T), time.Duration(ev.DL), ev.Lost)
		}
	}
	r := history.Check(s.log, &history.Options{EmptyingGap: simEmptyingGap})
	s.checkStorms()
	for _, msg := range s.storms {
		r.Violations = append(r.Violations, history.Violation{Kind: "renewal-storm", Msg: msg})
	}
	for _, msg := range s.readBack {
		r.Violations = append(r.Violations, history.Violation{Kind: "read-expired", Msg: msg})
	}
	if s.outage != nil {
		for _, msg := range s.outage.credit {
			r.Violations = append(r.Violations, history.Violation{Kind: "outage-credit", Msg: msg})
		}
		for _, msg := range s.outage.resumed {
			r.Violations = append(r.Violations, history.Violation{Kind: "resumed-ended", Msg: msg})
		}
	}
	return r, s.stats
}

func seeds() []int64 {
	if *simSeed >= 0 {
		return []int64{*simSeed}
	}
	n := *simSeeds
	if n == 0 {
		n = 2000
		switch {
		case !longtest.Enabled():
			n = 150 // the short form; the long form's 2000 run in CI (DSYNC_LONG=1)
		case raceEnabled:
			n = 300
		}
	}
	return seedRange(n)
}

func seedRange(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// plantedSeeds are the seeds a planted bug is looked for in: at least
// 1000, since some need a rare coincidence (a prune delivered late across
// a reset), and the search stops at the first seed that catches it.
func plantedSeeds() []int64 {
	if *simSeed >= 0 || *simSeeds > 1000 {
		return seeds()
	}
	return seedRange(1000)
}

// TestSimulation: on every seed, no two holds of a key that conflict are
// valid at once (readers of a reader-writer key may share it, weighted
// claims up to the limit), tokens of conflicting holds increase in the
// order they begin (within what lies between two resets of the store), no hold outlives its deadline unannounced, losses
// are signalled in time, observers polling the head of the queue never see
// it go back, and no session's renewals storm.
func TestSimulation(t *testing.T) {
	holds, handoffs, losses, polls, sharing, limits := 0, 0, 0, 0, map[string]int{}, 0
	var total simStats
	var once history.OnceStats
	for _, seed := range seeds() {
		r, st := runSim(t, seed, queue.NoBug, simNoBug, *simSeed >= 0)
		total.add(st)
		for mode, n := range sharingHolds(r) {
			sharing[mode] += n
		}
		limits += limitChanges(r)
		addOnce(&once, r.Once)
		holds += r.NumHolds
		handoffs += r.Handoffs
		losses += r.Losses
		polls += r.Observations
		if !r.OK() {
			var b strings.Builder
			for _, v := range r.Violations {
				fmt.Fprintf(&b, "\n  %v", v)
			}
			t.Fatalf("seed %d (replay: go test ./dsync/internal/queue -run TestSimulation -queue.seed=%d):%s", seed, seed, b.String())
		}
	}
	t.Logf("%d seeds: %d holds, %d handoffs, %d losses, %d observations; holds begun while another of their mode was valid: %d shared, %d weighted; limit changes %d; once %+v; %+v",
		len(seeds()), holds, handoffs, losses, polls, sharing[history.ModeShared], sharing[history.ModeWeighted], limits, once, total)
	if total.torn > 0 {
		t.Fatalf("%d session renewals wrote back a lower expiry than a later renewal's", total.torn)
	}
	if *simSeed < 0 && (holds == 0 || polls == 0 || handoffs == 0 || losses == 0 || total.late == 0 || total.prunes == 0 ||
		total.dead == 0 || total.withdrawn == 0 || total.tornDeletes == 0 || total.cleaned == 0 || total.lateConfirms == 0 ||
		total.nearDeadline == 0 || total.failovers == 0 || total.resets == 0 || total.restores == 0 || total.sessionDrops == 0 ||
		total.storeResets == 0 || sharing[history.ModeShared] == 0 || sharing[history.ModeWeighted] == 0 || limits == 0 ||
		once.Runs == 0 || once.Done == 0 || once.Skips == 0 || once.Reruns == 0 ||
		total.starts == 0 || total.orphans == 0 || total.compactions == 0 || total.lapses == 0 || total.revivals == 0 ||
		total.onceLags == 0 || total.doneKept == 0 || total.slowGates == 0 || total.drops == 0 || total.doneForgotten == 0 ||
		total.heldSessions == 0 || total.stalledAfterEmpty == 0 || total.stalledCovering == 0 || total.twice == 0 ||
		total.stuckLate == 0) {
		t.Fatalf("the simulation exercised too little: %d holds, %d handoffs, %d losses; %+v", holds, handoffs, losses, total)
	}
}

// sharingHolds counts, by mode, the shared and weighted holds that began
// while another hold of their mode on their key was valid: how often the
// run had claims share a key.
func sharingHolds(r *history.Report) map[string]int {
	n := map[string]int{}
	for _, hs := range r.Holds {
		for i, h := range hs {
			if h.Mode == "" {
				continue
			}
			for _, p := range hs[:i] {
				if p.Mode == h.Mode && p.Acquired <= h.Acquired && h.Acquired < p.ValidEnd() {
					n[h.Mode]++
					break
				}
			}
		}
	}
	return n
}

// rareSeeds are the seeds that last caught the rare planted errors (see
// TestSimulationCatchesPlantedBugs), tried before the others.
var rareSeeds = []int64{1782, 1287, 974, 353, 344, 129, 1046, 5752, 2875, 1382, 2965, 46, 16}

// caughtLast names, for the cases whose first catching seed comes late
// in the range, the seed that caught each last: tried first, it ends the
// case at once instead of after hundreds of runs (tens of seconds of the
// README's command); a case it no longer catches (a change to the
// protocol moves every seed's timing) searches the whole range as before.
var caughtLast = map[string]int64{
	"a server-time estimate without its error bounds":                 127,
	"a claim whose end marker a recheck did not find taken for ended": 637,
	"a read forgetting the sessions it found expired":                 536,
	"a claim passing claims of another history of the store":          1355,
}

// TestSimulationCatchesPlantedBugs is the negative control: each planted
// error must show up as a violation on some seed.
func TestSimulationCatchesPlantedBugs(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  queue.Bug
		sbug simBug
		// rare: the error needs a timing few seeds produce (a holder whose
		// gates land late while another process starts a segment: first
		// caught on seed 773 since the slow links, 2771 since a start
		// reads the protocol document back, 46 since gates record the
		// store's history; a sweep's delete of a done record landing
		// after a Do inserted it again, and another Do before it expired:
		// seed 630, 2575 since a start reads the protocol document back,
		// 3081 since gates record the store's history and requests are
		// held across emptyings, 2965 since a sweep reads the protocol
		// document again; since walks read runs of the queue, 1909 for
		// the start and 7429 for the sweep; since slow weighted waiters,
		// 1382 and 2875, 5752 since a refresh reads the protocol
		// document back; a process that kept a segment across an
		// emptying holding in the next history's segment of its number,
		// which needs the double emptying and a start in one quantum
		// across it (simspan_test.go): seed 16, 3 of the first 2,000;
		// compaction's late delete of a done record by ID: seed 344, 353, now
		// 1782 (since the owner model renews only while relied on); the
		// start skipping a bucket 129, and a claim passing another
		// history's 1046, with stuck workers, since that owner model
		// 1287 and 974):
		// run three times the seeds
		// for it, the seeds that caught it last first (any change to the
		// protocol's requests moves every seed's timing).
		rare bool
	}{
		{"withdrawal recorded as release", queue.BugWithdrawAsRelease, simNoBug, false},
		{"inserts below the floor, counted without proof", queue.BugNoFloorProof, simNoBug, false},
		{"pruning below a gate's floor before its bucket is past", queue.BugPruneEarly, simNoBug, false},
		{"a gate's floor lower than the gate's before", queue.BugFloorNotMonotone, simNoBug, false},
		{"end markers named by session, not by claim", queue.BugEndBySession, simNoBug, false},
		{"renewing a session document after an unknown outcome", queue.BugRenewSameGen, simNoBug, false},
		{"holding on knowledge the store no longer confirms", queue.BugTrustCache, simNoBug, false},
		{"a session found missing taken for dead at once", queue.BugAbsentIsDead, simNoBug, false},
		{"claims confirmed at their insert remembered by key", queue.BugHeadsByKey, simNoBug, false},
		{"a shared claim passing every live claim", queue.BugSharedPassesAll, simNoBug, false},
		{"any release ending every walk", queue.BugAnyReleaseStops, simNoBug, false},
		{"weights checked one by one, not summed", queue.BugWeightsNotSummed, simNoBug, false},
		{"a claim chained on its own release whatever the modes", queue.BugTipAnyMode, simNoBug, false},
		{"a weighted claim chained without the weight below", queue.BugTipWeightIgnored, simNoBug, false},
		{"a weighted claim chained taking the claims below for ended", queue.BugTipEndsAssumed, simNoBug, false},
		{"a walk stopping at any weighted release of its own process", queue.BugOwnReleaseStops, simNoBug, false},
		{"a claim whose end marker a recheck did not find taken for ended", queue.BugRecheckMissingEnds, simNoBug, false},
		{"a full walker taking the claims it did not read again for ended", queue.BugFullDropsUnread, simNoBug, false},
		{"a waiter dropping the floor's own claim with those below the floor", queue.BugFloorClaimDropped, simNoBug, false},
		{"a renewal confirmed past the deadline keeps the lease", queue.BugLateConfirmKept, simNoBug, false},
		{"a renewal confirmed past the deadline extends it", queue.BugLateConfirmExtends, simNoBug, false},
		{"timers that count only awake time", queue.NoBug, simBugAwakeTimers, false},
		{"a server-time estimate without its error bounds", queue.NoBug, simBugNarrowEstimate, false},
		{"a compacted key's tokens starting again low", queue.BugCompactResetsTokens, simNoBug, false},
		{"compaction deleting done records", queue.NoBug, simBugCompactForgetsDone, false},
		{"compaction deleting expired done records by ID, late", queue.NoBug, simBugCompactDoneByID, true},
		{"relying on a segment without coverage", queue.BugNoCoverage, simNoBug, false},
		{"a start skipping the bucket before its time", queue.BugStartSkipsPrevBucket, simNoBug, true},
		{"a segment relied on whatever span the store records", queue.BugSpanIgnored, simNoBug, false},
		{"a session back without its first generation judged by its expiry", queue.BugLostFirstIsDead, simNoBug, false},
		{"a gate relied on whatever history of the store it was sent in", queue.BugHistoryIgnored, simNoBug, false},
		{"a start writing the protocol document with its gates' history", queue.BugStartWritesHistory, simNoBug, false},
		{"a claim passing claims of another history of the store", queue.BugClaimHistoryIgnored, simNoBug, true},
		{"a read forgetting the sessions it found expired", queue.BugReadExpiredForgets, simNoBug, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bug != queue.NoBug && !queue.Planted {
				t.Skip("planting a bug in the engine needs -tags dsync_planted")
			}
			seeds := plantedSeeds()
			if tc.rare && *simSeed < 0 && len(seeds) < 3000 {
				seeds = append(slices.Clone(rareSeeds), seedRange(3000)...)
			}
			if seed, ok := caughtLast[tc.name]; ok && *simSeed < 0 {
				seeds = append([]int64{seed}, seeds...)
			}
			for _, seed := range seeds {
				if r, _ := runSim(t, seed, tc.bug, tc.sbug, false); !r.OK() {
					t.Logf("caught on seed %d: %v", seed, r.Violations[0])
					return
				}
			}
			t.Errorf("no seed out of %d caught it", len(seeds))
		})
	}
}
