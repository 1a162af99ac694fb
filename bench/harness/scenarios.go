package harness

import (
	"io"
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
	// A partitioned election (partition.go).
	PartitionScenario = "partition"
	// Transfer of an election's leadership (transfer.go), beside
	// Graceful.
	TransferScenario = "transfer"
	// Sets of keys held all or nothing (lockset.go), beside the same
	// keys locked one by one in their order.
	LockSetScenario = "lockset"
)

// AllScenarios lists every scenario.
var AllScenarios = []string{Uncontended, Handoff, Failover, Graceful, Idle, Renewal, Throughput, Race, Scale,
	RWMutexScenario, SemaphoreScenario, OnceScenario, PartitionScenario, TransferScenario, FloorScenario, LockSetScenario}

// Options sizes the scenarios. Zero values take Defaults' values.
type Options struct {
	Scenarios []string // nil: all
	Runs      int      // repeated runs of each figure

	Cycles       int           // uncontended: Lock+Unlock cycles per run
	Handoffs     int           // handoff, graceful: handoffs per run
	Waiters      []int         // handoff: waiting processes
	Candidates   []int         // graceful, transfer: waiting candidates
	HoldMin      time.Duration // handoff: a holder holds for a uniform random
	HoldMax      time.Duration //   time in [HoldMin, HoldMax]
	Settle       time.Duration // handoff, graceful: the waiters' start before a run's first handoff
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

	// scale (scale*.go): idle keys in two namespaces (keys in the
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
	// then Cycles Do on a done key. Live: rwmutex and semaphore also
	// time Cycles of one process's RLock+RUnlock (Acquire(1)+Release(1),
	// the semaphore's limit the largest of Live) while the others of each
	// number of live claims hold (family_live.go).
	Readers    []int
	SemLimit   int64
	SemWaiters []int
	Live       []int
	OnceProcs  int
	OnceRaces  int

	// partition (partition.go): PartShards shards over each number of
	// processes of PartProcs, on leases of PartTTL: joins, a graceful
	// leave and a SIGKILL timed to balance, and what each member sends
	// over PartSteadyWindow while nothing changes.
	PartShards       int
	PartProcs        []int
	PartTTL          time.Duration
	PartSteadyWindow time.Duration

	// lockset (lockset.go): LockSetProcs processes take LockSetSets sets
	// in all, over the runs, each of 2 to 4 of LockSetKeys keys drawn at
	// random and named in random order; then as many again as Mutexes
	// locked one by one in the keys' order (the baseline). A set not held
	// within LockSetBound is given up and counted as stuck.
	LockSetProcs int
	LockSetKeys  int
	LockSetSets  int
	LockSetBound time.Duration

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
	Settle:       time.Second,
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
	Live:       []int{1, 4, 16, 64},
	OnceProcs:  4,
	OnceRaces:  10,

	PartShards: 16,
	PartProcs:  []int{1, 2, 4, 8},
	// Short, as the failover's, so that a SIGKILL is over in seconds; a
	// member heartbeats once per renew interval, TTL/3.
	PartTTL: 3 * time.Second,
	// Many heartbeats and renewals, and a clock sample or two.
	PartSteadyWindow: 20 * time.Second,

	LockSetProcs: 8,
	LockSetKeys:  12,
	LockSetSets:  10000,
	// Far above any wait of a set that moves: a set still waiting then
	// is stuck, not slow.
	LockSetBound: time.Minute,
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
	Settle:         time.Second,
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
	Live:       []int{1, 3},
	OnceProcs:  2,
	OnceRaces:  2,

	PartShards:       4,
	PartProcs:        []int{1, 2},
	PartTTL:          2 * time.Second,
	PartSteadyWindow: 2 * time.Second,

	LockSetProcs: 2,
	LockSetKeys:  6,
	LockSetSets:  10,
	LockSetBound: 30 * time.Second,
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
	defD(&o.Settle, d.Settle)
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
	defS(&o.Live, d.Live)
	def(&o.OnceProcs, d.OnceProcs)
	def(&o.OnceRaces, d.OnceRaces)
	def(&o.PartShards, d.PartShards)
	defS(&o.PartProcs, d.PartProcs)
	defD(&o.PartTTL, d.PartTTL)
	defD(&o.PartSteadyWindow, d.PartSteadyWindow)
	def(&o.LockSetProcs, d.LockSetProcs)
	def(&o.LockSetKeys, d.LockSetKeys)
	def(&o.LockSetSets, d.LockSetSets)
	defD(&o.LockSetBound, d.LockSetBound)
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}
