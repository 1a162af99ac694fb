package harness

import (
	"fmt"
)

// scenarioText says what a scenario measures, with the sizes of o.
func scenarioText(sc string, o Options) (title, text string) {
	switch sc {
	case Uncontended:
		return "Uncontended Lock+Unlock", fmt.Sprintf("One process locks and unlocks one key in a loop (%d cycles per run); nobody else uses it. "+
			"Commands are counted by the client (MongoDB: the driver's command monitor; Redis: a go-redis hook; etcd: gRPC interceptors, "+
			"one per unary RPC or stream message sent); bytes are everything the client's connections wrote and read, driver heartbeats included.", o.Cycles)
	case Handoff:
		return "Handoff", fmt.Sprintf("One process holds the lock, N others wait in Lock. The holder unlocks after a random %v–%v hold; the figure is the time "+
			"from the start of Unlock in the holder to the return of Lock in the next holder, both read from CLOCK_MONOTONIC in their own processes "+
			"(%d handoffs per run). The former holder then waits again, so N processes always wait.", o.HoldMin, o.HoldMax, o.Handoffs)
	case Failover:
		return "Failover", fmt.Sprintf("A holder (or leader) and one waiting process; the holder is killed with SIGKILL at a random point of its renewal cycle; "+
			"the figure is the time from the kill to Lock (Campaign) returning in the waiter, as a multiple of the lease TTL (%d kills).", o.FailoverRuns)
	case Graceful:
		return "Graceful leader handoff", fmt.Sprintf("Like Handoff, with an election: the leader calls Resign, and the figure is the time until the next "+
			"candidate's Campaign returns (%d handoffs per run).", o.Handoffs)
	case TransferScenario:
		return "Leadership transfer", fmt.Sprintf("Like Graceful, but the leader hands its leadership to the candidate queued last "+
			"(Transfer), so the N−1 ahead of it step aside first (with N = 1 it is next already); the former leader then campaigns again, "+
			"last. Two figures: the time from the end of the old term (its context cancelled, just before the release) to the return of "+
			"Campaign in the chosen candidate, Graceful's handoff, and the time from the start of Transfer to it, which includes the "+
			"step-aside (%d handoffs per run).", o.Handoffs)
	case Idle:
		return "Load of waiting processes", fmt.Sprintf("One process holds the lock, N wait in Lock; what the waiters send per second, counted over %v per run. "+
			"Leases have the TTL %v.", o.IdleWindow, DefaultTTL)
	case Renewal:
		return "Renewal cost", fmt.Sprintf("One process holds many locks (TTL %v, renewed every %v) with the library's own renewal, or the loop a user "+
			"would write where it has none; commands and bytes per renew interval (over %d intervals), the latency of the renew command(s), "+
			"and how long per interval at least one renew command is in flight. Acquiring gives up after %v.", o.RenewTTL, o.RenewTTL/3, o.RenewIntervals, o.AcquireBudget)
	case Throughput:
		return "Contended throughput", fmt.Sprintf("%d processes lock and unlock one key as fast as they can, for %v per run; holds per second in all, "+
			"and how evenly they are split (Jain's index: 1 is an equal split, 1/%d is one process taking everything).", o.Procs, o.ThroughputFor, o.Procs)
	case Scale:
		return "Scale", fmt.Sprintf("What grows with the history of the lock collection, and with the number of waiting processes; "+
			"one run per figure. **Idle keys**, in two series, each in a namespace of its own grown in turn to each size by %d Clients "+
			"locking and unlocking new keys (named as a user names dated jobs, `report-2026-11-23-<i>`); a size whose loading would take "+
			"longer than %v is not measured (the notes say so). *Keys in the collection*: used within the idle age, nothing compacted; "+
			"*keys compacted*: left idle past a short idle age, and compacted before the figures are taken (the lock collection's "+
			"documents counted until they stop falling; when they did, after the loading, is a figure). At each size up to %d fresh "+
			"Clients (a new connection and backend each, cold caches: a cron job's process) each make a first Lock+Unlock, one at a time, "+
			"timed from the new connection to Unlock's return (fewer once %v is spent, and none more after one is cut short at %v, shown "+
			"as ≥: the notes say so); their commands are counted by name by the driver's command monitor, and the server's CPU over "+
			"each is divided among them, as are the commands the loaders (connected all along) send meanwhile. The status page is the library's command-line listing of %d keys, cut short after %v. What the "+
			"store keeps is counted per collection after loading (and compaction). **Waiting processes**: one process holds a key and W "+
			"wait for it (beyond %d processes, the waiting Clients are packed several to a process, each with its own connection and "+
			"backend: the notes say how); %d handoffs as in Handoff, then, while they wait, what each waiter sends over %v, by command, "+
			"and the server's CPU meanwhile.",
			o.ScaleLoaders, o.ScaleLoadBudget, o.ScaleFresh, o.ScaleFreshBudget, o.ScaleFreshTimeout, o.ScaleStatusLimit, o.ScaleStatusTimeout,
			o.ScaleProcs, o.Handoffs, o.ScaleIdleWindow)
	case RWMutexScenario:
		return "Reader/writer lock: readers", fmt.Sprintf("N processes, each with the same reader/writer lock (dsync.RWMutex; etcd's "+
			"experimental/recipes RWMutex), take and release its read side (RLock+RUnlock) as fast as they can, for %v per run, with no writer. "+
			"RLock+RUnlock per second in all, and the commands each process sent over its cycles divided by its cycles (renewals and "+
			"other background commands included).", o.ThroughputFor) + liveReadersText(o)
	case SemaphoreScenario:
		return "Semaphore", fmt.Sprintf("A semaphore of %d units. **Uncontended**: one process acquires and releases one unit in a loop "+
			"(%d cycles per run), as in Uncontended. **Handoff**: all %d units are held, %d of them by a process that keeps them; the holder of "+
			"the last releases it after a random %v–%v hold and N processes wait in Acquire(1); the figure is the time from the start of "+
			"Release in the holder to the return of Acquire in the next holder, as in Handoff (%d handoffs per run).",
			o.SemLimit, o.Cycles, o.SemLimit, o.SemLimit-1, o.HoldMin, o.HoldMax, o.Handoffs) + liveUnitsText(o)
	case OnceScenario:
		return "Once", fmt.Sprintf("**Racing**: %d processes call Do on a new Once of a fresh key at the same CLOCK_MONOTONIC instant, "+
			"%d keys per run; f returns at once. The time from that instant until the last Do returned (p50, p99 within a run), how many times "+
			"f ran for a key (the most over all keys), and the commands all the processes sent during their Do. **Done key**: one process "+
			"calls Do on a key done earlier, with a new Once each time (%d per run): what a process starting up pays; a Once that saw the "+
			"record answers later calls from memory.", o.OnceProcs, o.OnceRaces, o.Cycles)
	case PartitionScenario:
		return "Partitioned election", fmt.Sprintf("%d shards of one job over N processes, each a member of one partitioned election "+
			"(leases of TTL %v, a heartbeat per renew interval); every member runs a function per shard it owns, which reports when it starts "+
			"and when it returns, with the term's token: ownership is seen by the members themselves, read from CLOCK_MONOTONIC in their own "+
			"processes. Balanced: every shard owned by one member, every member owning the shards divided by N, rounded down or up. "+
			"The last member joins the N−1 others once they are balanced (N = 1: the first member, an empty partition): the time from the join to "+
			"the last start or end that balanced the shards, and the shards moved against the fewest that must move; then what each member sends "+
			"over %v while nothing changes, per heartbeat and by command; then it leaves gracefully (Run's context ends, then Close: the time "+
			"from the start of the leave to balance), joins again (a second join), and is killed with SIGKILL: the time until every shard is "+
			"owned again and until balance. The handoff of one shard is the time from its old owner's function returning to its new owner's "+
			"starting, over every shard moved by a join or a leave (p50 and max of all of them). %s for each N; a change counts as over once the "+
			"shards are balanced and no member reported anything for two heartbeats. By command: dsync's read of its session's revocation "+
			"is \"revoke check\" (the lease's upkeep, beside the renewal and the event cursor's getMore); columns measured before 2026-11-27 "+
			"count it under find.", o.PartShards, o.PartTTL, o.PartSteadyWindow, count(o.Runs, "run"))
	case FloorScenario:
		return "The store's floor", fmt.Sprintf("What the server under the library can commit, measured before the other scenarios: "+
			"inserts of one small document each (an _id and a few fields, as a claim), with the write concern the library writes with "+
			"(dsync: majority, which is w:1 on a standalone server and on FerretDB), into a collection of their own; one connection "+
			"sending one insert at a time (the next once the last is acknowledged), then %d connections (as %d processes) doing so at "+
			"once, for %v per run. Below, each Mutex and RWMutex figure of the same library against it: a steady Lock+Unlock (or "+
			"RLock+RUnlock) is two inserts, its claim and its release, and nothing else; a figure far from its floor spends the rest "+
			"elsewhere.", o.Procs, o.Procs, o.ThroughputFor)
	case LockSetScenario:
		return "Lock sets", fmt.Sprintf("%d processes each take sets of %d–%d of %d keys, drawn at random and named in random order, "+
			"one after another as fast as they can, and let each go as soon as it is held: %d sets in all over %s, as one lock set each "+
			"(dsync's lockset.Set: the keys taken in one global order, all or nothing), and as many again the way a user without lock sets "+
			"would write it, the keys sorted by hand and their Mutexes locked one by one in that order (the baseline). The two ways take "+
			"turns, a run of each at a time, each run in a namespace of its own (a fresh lock collection: the store keeps a busy key's "+
			"history of the last minutes, which FerretDB decodes on every read) after a warm-up of two sets per process. The time to hold is from the call of Lock "+
			"to its return, read from CLOCK_MONOTONIC in the process; sets/s counts the sets held from the run's common start to the last "+
			"release. Every process reports each hold with its keys' tokens, and the checks count, key by key, holds acquired before the "+
			"key's earlier hold was released (two holders at once), holds whose token is not above that of the key's hold before, and "+
			"sets not held within %v (given up and counted as stuck). Commands: what all the processes sent during a run, renewals "+
			"included, over its sets.",
			o.LockSetProcs, setMinKeys, setMaxKeys, o.LockSetKeys, o.LockSetSets, count(max(o.Runs, 1), "run"), o.LockSetBound)
	case Race:
		return "Race for a free lock", "Contenders, each with its own connection, make a single attempt (TryLock) at the same moment on a released lock; " +
			"more than one winner in a round means two holders at once."
	}
	return sc, ""
}
