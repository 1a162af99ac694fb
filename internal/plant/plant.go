// Package plant switches the bugs planted above the engine (in dsync,
// dsync/lockset, leader and fence/fencemongo) for the negative controls
// of the public-API simulation (integration/apisim) and of
// fence/fencemongo's fenced-register simulation. Only a build with -tags
// dsync_planted can plant one: in every other build On is false and the
// bugs' branches compile away. (contrib/gocron, a module of its own that
// imports no internal package of the library, has its own switch.)
package plant

import "sync/atomic"

// Bug is a planted error of a layer above the engine.
type Bug int32

const (
	// None: nothing planted.
	None Bug = iota
	// MutexPastDeadline: a session's deadline timer fires a TTL late, so
	// a hold whose lease could not be renewed stays valid locally (Lost()
	// open) past its deadline.
	MutexPastDeadline
	// ReaderPastWriter: the engine lets a reader pass a writer that waits
	// (queue.BugReadersPassWaitingWriters), so the writer then holds
	// beside readers.
	ReaderPastWriter
	// SemaphoreOverLimit: a Semaphore's claims carry a limit one above
	// the one it was made with.
	SemaphoreOverLimit
	// OnceLateRecord: Once.Do counts a done record whose reply came after
	// its hold ended, and returns nil.
	OnceLateRecord
	// LeaderKeepsTerm: an election ignores the loss of its lease, so its
	// leadership context lives on while another candidate leads.
	LeaderKeepsTerm
	// SpanIgnored: the engine relies on a segment whatever bucket span
	// the store's protocol document records (queue.BugSpanIgnored), so
	// processes configured with different spans can both hold after an
	// emptying.
	SpanIgnored
	// HistoryIgnored: the engine relies on a gate whatever history of
	// the store it was sent in (queue.BugHistoryIgnored), so a start held
	// back across an emptying hands out tokens below those handed out
	// before it.
	HistoryIgnored
	// FenceSkipsCondition: a fencemongo Fenced compares fences with the
	// largest token there is instead of its own, so that no fence refuses
	// its reads and writes (fence/fencemongo's fenced-register simulation).
	FenceSkipsCondition
	// PartitionSkipsWait: a leader.Partition runs a shard's function as
	// soon as it queues for the shard, before its campaign is won, so
	// beside the shard's previous owner (integration/apisim's partition
	// simulation).
	PartitionSkipsWait
	// PartitionIgnoresOwners: the Partition's assignment ignores who owns
	// each shard now (shard.Assign given no current owners), so a change
	// of membership moves more shards than it needs to.
	PartitionIgnoresOwners
	// TransferSkipsWait: leader.Election.Transfer releases without
	// waiting for its candidate's claim to be the next, so another
	// candidate than the one asked for leads next.
	TransferSkipsWait
	// TransferReleasesFirst: leader.Election.Transfer releases the lease
	// before it cancels the term's context, so the next leader starts
	// while the old one's context lives: two leaders.
	TransferReleasesFirst
	// ReadExpiredForgets: a Client's reads forget that they found a
	// claim's session expired (queue.BugReadExpiredForgets), so a late
	// renewal makes Queue and Election.Leader name the ended claim again
	// after the one behind it.
	ReadExpiredForgets
	// ObserveEmitsOnChange: Election.Observe sends what it reads whenever
	// it differs from what it sent last, nobody leading included, instead
	// of only a newer leader or value: the token it sends goes back.
	ObserveEmitsOnChange
	// PriorityIgnored: leader's steering ignores ranks: no waiting
	// candidate steps aside for a better one, and no leader preempts.
	PriorityIgnored
	// VersionGateSkipped: under leader.WithVersionRule, a candidate whose
	// claim comes to hold begins its term without reading the members
	// again, so an older version can lead while a newer one is live.
	VersionGateSkipped
	// DrainOnlyOwned: a leader.Partition keeps a drained member's weight
	// and only avoids giving it the shards it owns now, so the shards it
	// gives up come back to it, and it takes others.
	DrainOnlyOwned
	// StallNeverFires: a progress deadline (dsync.WithProgressDeadline)
	// never stalls a hold, however long its work reports nothing.
	StallNeverFires
	// StallFromHoldStart: Progress is ignored, so a hold whose work
	// reports progress is stalled a deadline after it began.
	StallFromHoldStart
	// StallReleasesFirst: a stalled hold's claim is released a tenth of
	// the TTL before its Lost() closes, so the next holder holds beside
	// it.
	StallReleasesFirst
	// StallKeepsClaim: a stalled hold's claim is never released, so the
	// next waiter waits while the stalled holder's session lives.
	StallKeepsClaim
	// ShardStallStaysOwned: a leader.Partition member whose run of a
	// shard stalled goes on listing the shard as owned, so the others do
	// not take it until the run returns.
	ShardStallStaysOwned
	// PreemptAtBeat: a leader.WithPreemption leader acts on a better
	// candidate only at its heartbeats, so it preempts up to a heartbeat
	// after the delay has passed, not at its end.
	PreemptAtBeat
	// RelockAnew: a Mutex locked again after its hold was lost to a
	// suspension that ended it locks anew and returns nil, with a new
	// token, instead of the error that says the hold ended.
	RelockAnew
	// ResumeUnchecked: the engine resumes a suspended session without
	// the store's record of up-time (queue.BugResumeUnchecked), so a
	// holder cut off alone, whose key a waiter took, is credited with the
	// outage and takes its hold back beside the waiter.
	ResumeUnchecked
	// OutageUncredited: the engine judges a claim with an outage grace by
	// its expiry alone (queue.BugOutageUncredited), so a waiter takes the
	// key of a holder that could no more reach the store than itself as
	// soon as the store is back.
	OutageUncredited
	// ShardGivesUpInOutage: a leader.Partition shard's run whose term is
	// lost to an outage of the store resigns it rather than take it
	// back, so the shard's next term, after the outage, has a new token.
	ShardGivesUpInOutage
	// LockSetOutOfOrder: a lockset.Set takes its members in the order
	// they were given, not by stored key, so that two Sets given two keys
	// in opposite orders may each hold one and wait for the other, a
	// cycle of Locks that the global order rules out.
	LockSetOutOfOrder
	// LockSetVictimOldest: the Set that gives up its wait to break a
	// deadlock is the oldest of the cycle, not the youngest.
	LockSetVictimOldest
	// LockSetChainAsCycle: a Set whose deadlock check finds no cycle
	// takes the first wait of a chain from itself, to a claim another Set
	// holds, for one, and gives up a wait that closed no cycle.
	LockSetChainAsCycle
	// LockSetNoVictim: no Set of a cycle is its victim, so deadlocks
	// between Sets last until a wait's context ends, as without
	// detection.
	LockSetNoVictim
)

var planted atomic.Int32

// Set plants b (None: nothing) for every Client and Election of the
// process until the next Set. It panics unless the build can plant.
func Set(b Bug) {
	if b != None && !On {
		panic("plant: planting a bug needs -tags dsync_planted")
	}
	planted.Store(int32(b))
}

// Is reports whether b is planted.
func Is(b Bug) bool { return On && Bug(planted.Load()) == b }
