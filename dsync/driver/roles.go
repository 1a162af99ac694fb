package driver

import (
	"context"
	"time"
)

// Roles are the parts of the contract a store may serve besides Store's
// methods. Store.Roles returns them. Each field is nil where the store
// serves none, and dsync does without it as each field says. A driver sets
// the fields of the parts it serves; a wrapper that embeds a Store passes
// them on unchanged, unless it overrides Roles to see or replace one (it
// starts from the embedded store's Roles and sets that field).
type Roles struct {
	// Runs reads a stretch of a key's queue in one request. Without it,
	// dsync reads a queue's claims and their markers one by one (Get).
	Runs RunReader
	// Maintenance serves the sweeper. Without it, nothing is compacted:
	// the documents of idle keys stay, and statuspage.Compact fails
	// with an error wrapping errors.ErrUnsupported.
	Maintenance Maintainer
	// Directory is the directory of keys that statuspage.Reader.List reads.
	// Without it, claimed keys are not recorded, and List, HasKey and
	// ListOrder fail with an error wrapping errors.ErrUnsupported.
	Directory KeyDirectory
	// Reads makes the store ready for reads without writing. Without it,
	// a read prepares the store with Prepare.
	Reads ReadPreparer
	// KeyCheck refuses the keys the store cannot store. Without it, every
	// key that dsync accepts is sent.
	KeyCheck KeyChecker
	// Feed carries wake-up hints between processes. Without it, waiters
	// look at the claim ahead of them every poll interval.
	Feed Feed
	// FeedPause pauses Feed's follower while hints come another way.
	// Without it, its events are dropped meanwhile (package dsync/hint).
	FeedPause FeedPauser
	// Peers records what direct hints between processes need. Without
	// it, a Client takes no direct hints (dsync.ClientWithHints fails).
	Peers PeerStore
	// Revocations records an operator's revocations of sessions. Without
	// it, statuspage.Reader.Revocations lists none, and no session is checked
	// for one.
	Revocations RevokeStore
	// Stalls records the holds that stalled (a progress deadline passed).
	// Without it, no stall is recorded, and statuspage.Reader.Stalls lists
	// none.
	Stalls StallStore
	// Loopback says whether the store is reached over loopback. Without
	// it, direct hints are not turned on by default.
	Loopback LoopbackReporter
	// Uptime renews sessions with a record of when the store was up, and
	// reads that record back. A Client with an outage grace (the default:
	// dsync.ClientWithOutageGrace) renews through it instead of
	// RenewSession, and its waiters judge a claim with a grace by that
	// record. Without it, no hold rides through an outage, and sessions
	// are judged by their expiry alone. A wrapper that overrides
	// RenewSession or InsertSession to see or fail renewals must override
	// Roles too, wrapping this role's renewals or setting it to nil:
	// otherwise renewals go past it.
	Uptime UptimeStore
	// Waits keeps lock sets' notes that they wait while they hold, and
	// Deadlocks the records of deadlocks broken: the wait-for graph
	// between lock sets, and what was done about it (package
	// dsync/lockset, WithDeadlockTimeout). Without Waits, lock sets
	// detect no deadlock. No rule of the queue reads them.
	Waits     WaitStore
	Deadlocks DeadlockStore
	// Outages records the outages of the store that sessions rode
	// through (Uptime's resumes). Without it, none is recorded, and
	// statuspage.Reader.Outages lists none.
	Outages OutageStore
}

// RunReader reads a stretch of a key's queue in one request (Roles.Runs).
// With it, a walk down a queue of many live claims (readers of an RWMutex,
// units of a Semaphore) costs a request or two, not two per claim. Without
// it, dsync reads the claims and their markers one by one (Get).
type RunReader interface {
	// GetRun returns key's claims (KindClaim) of epochs from from to to,
	// both included, and their end markers (KindRelease, KindWithdraw,
	// KindDead), in increasing order of epoch, each claim before its
	// markers: one request where the epochs have as many digits (their
	// IDs then sort as their epochs do). It may return other documents of
	// those epochs too (shadows, markers of another nonce than the
	// claim's): the caller skips them.
	//
	// Each document returned was read no earlier than the ones before it
	// (a server reading an index in order does so; a store that reads
	// the whole run at one instant too), and none before the request was
	// sent. A document not returned was missing when the read passed its
	// place. The engine relies on the order: a run that ends with the
	// caller's own claim proves that claim still stored after everything
	// below it was read.
	//
	// A store whose server would answer a run by reading far more than
	// the run (FerretDB 1.24 decodes a whole collection for a find by an
	// _id range, an _id $in list or anything but {_id: value} on SQLite)
	// answers ErrRunsUnsupported, before any I/O: dsync then reads by ID,
	// and stops asking.
	GetRun(ctx context.Context, key string, from, to uint64) ([]Doc, error)
}

// KeyChecker is what a store whose keys have limits provides
// (Roles.KeyCheck). Its CheckKey refuses a key the store cannot store,
// before any I/O.
type KeyChecker interface {
	CheckKey(key string) error
}

// Maintainer is what a store provides to dsync's sweeper
// (Roles.Maintenance). It finds the keys in use and deletes the documents
// of the others. Only a sweeper calls it, once in a while, in one process
// at a time (two at once are harmless).
type Maintainer interface {
	// RecentKeys returns the keys that have a gate of a bucket at or above
	// from: the keys in use. Its cost may grow with the documents stored.
	RecentKeys(ctx context.Context, from int64) ([]string, error)
	// Compact deletes every document sent before sentBefore (claims,
	// shadows, markers, floors, gates), but the protocol document, the
	// documents of the keys in keep, and the done records without an Exp
	// or with one at or after sentBefore, and returns how many it deleted. It
	// may cost a pass over the documents stored: it should be one. It may
	// be applied as a read and a later delete by ID, but for done records:
	// a done record's ID comes back when a Do after its expiry inserts it
	// again, so the store judges a done record by sentBefore when the
	// delete reaches it (a delete landing late must spare a record
	// inserted again since).
	Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error)
	// DropGates deletes the gates of buckets below below, of every key,
	// that were sent before sentBefore (their Sent): a drop landing late,
	// after the store was emptied and a process of another span recorded
	// gates whose bucket numbers lie below below, must spare them.
	DropGates(ctx context.Context, below int64, sentBefore time.Time) error
}
