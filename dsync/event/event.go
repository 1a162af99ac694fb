// Package event holds what a dsync.Client tells its observer, for metrics
// and alerts. It is not a log: an observer that falls far behind loses
// events. Set one with dsync.ClientWithObserver.
package event

import "time"

// An Observer is told what a Client's locks and its lease do. It serves
// metrics and alerts: how long callers wait and hold, holds lost, how
// renewals go. Every field is optional. The calls come after the fact, one
// at a time and in order, from a goroutine of the Client's own: an observer
// never delays a lock, a renewal or anything else of the protocol. An
// observer that falls far behind loses events rather than make anything
// wait: Dropped, if set, is told how many.
//
// Keys are as the caller gave them (a Mutex's key, an RWMutex's...), with
// Kind telling the primitive apart. Durations are on the Client's clock.
type Observer struct {
	// Acquired: a Lock, RLock, Acquire, TryLock... held after waiting
	// Wait (from the call to the hold).
	Acquired func(Acquisition)
	// AcquireFailed: a call that asked for a hold returned without one. It
	// returned after Wait: its context ended, the key was held (a try:
	// dsync.ErrHeld), or the store failed.
	AcquireFailed func(a Acquisition, err error)
	// Released: a hold ended by its caller (Unlock, RUnlock, Release)
	// after Held.
	Released func(h Held)
	// Lost: a hold ended without its caller. Its lease ran out (renewals
	// failed), the store no longer knew its session, or its work reported
	// no progress within its progress deadline (err wraps dsync.ErrStalled). err
	// wraps dsync.ErrLost, as Err's does.
	Lost func(h Held, err error)
	// Waiting: how many callers of this Client wait for a hold now. A Lock,
	// RLock or Acquire that waits counts; tries do not.
	Waiting func(n int)
	// Renewed: a renewal of the Client's lease was confirmed.
	Renewed func(Renewal)
	// RenewFailed: a renewal failed; the lease stands until its deadline
	// (Renewal.Headroom of the last confirmed one tells how close that is).
	// A renewal still without reply when the deadline passed is told too,
	// once the deadline has cut it short.
	RenewFailed func(err error)
	// Dropped: n events were dropped because the observer fell behind.
	Dropped func(n int)
	// DeadlockBroken: a lock set of this Client (package dsync/lockset)
	// gave up its wait as the youngest set of a deadlock.
	DeadlockBroken func(Deadlock)
	// OutageRidden: the Client's lease, suspended at its deadline in an
	// outage of the whole store (dsync.ClientWithOutageGrace), resumed
	// once the store was back: the holds it had were lost (Lost was told,
	// with dsync.ErrSuspended) but their claims kept, for their owners to
	// take back with the same tokens.
	OutageRidden func(Outage)
}

// An Outage is an outage of the whole store that a Client's lease rode
// through (Observer.OutageRidden).
type Outage struct {
	// Suspended and Resumed are when the lease was suspended (its
	// deadline: its holds' Lost closed then) and resumed, on the Client's
	// clock. The store's outage began up to a TTL earlier.
	Suspended, Resumed time.Time
	// Holds is how many holds' claims the resume kept.
	Holds int
}

// Kind names the primitive an event is of.
type Kind string

// The kinds of holds.
const (
	KindMutex     Kind = "mutex"
	KindRead      Kind = "rwmutex-read"  // RWMutex.RLock
	KindWrite     Kind = "rwmutex-write" // RWMutex.Lock
	KindSemaphore Kind = "semaphore"
	KindOnce      Kind = "once"
	KindElection  Kind = "election" // a leader.Election's lease
)

// An Acquisition is a call that asked for a hold.
type Acquisition struct {
	Key  string
	Kind Kind
	// Wait is how long the call took, from its start to its hold or
	// failure.
	Wait time.Duration
	// Token is the hold's fencing token; 0 if it failed.
	Token uint64
}

// Held is a hold that ended.
type Held struct {
	Key   string
	Kind  Kind
	Token uint64
	// Held is how long it was held: from the hold to its end. For a lost
	// hold, it runs to when the Client found it lost.
	Held time.Duration
}

// A Renewal is a confirmed renewal of a Client's lease. There is one per
// TTL and renew interval in use, shared by every hold and waiting claim
// with them.
type Renewal struct {
	TTL time.Duration
	// Latency is the renewal's round trip.
	Latency time.Duration
	// Headroom is how much time the lease had left at the confirmation. It
	// is counted up to the deadline then in force: the closer to 0, the
	// closer its holds came to being lost. A healthy lease has about TTL
	// minus the renew interval (and the margin) at every renewal.
	Headroom time.Duration
}

// A Deadlock is a cycle of lock sets' waits that a set of the Client broke
// by giving up its wait. Keys are as stored (a namespaced key begins with
// "dsync:"): the cycle's other sets may be of other processes.
type Deadlock struct {
	// Victim is the identity of the set that gave up its wait (the Waiter
	// of its claims), Key the key it waited at.
	Victim, Key string
	// Cycle is every wait of the cycle, the victim's first: its Set
	// waited at Key for the claim of token Token held by the set HeldBy,
	// the Set of the next one.
	Cycle []DeadlockEdge
}

// A DeadlockEdge is one wait of a Deadlock.
type DeadlockEdge struct {
	Set, Key, HeldBy string
	Token            uint64
}
