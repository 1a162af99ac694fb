// Package dsyncmongo is the MongoDB backend of dsync: distributed locks
// whose state lives in one collection of a MongoDB (or MongoDB-compatible,
// such as FerretDB) database.
//
//	locks, err := dsyncmongo.New(db) // collection "dsync_locks"
//	...
//	defer locks.Close()
//	mu, err := dsync.NewMutex(locks, "nightly-billing")
//
// # Guarantees
//
// While the package's assumptions hold (below), at most one Mutex holds a
// key at any time, as judged by each holder's own local deadline (see
// dsync). Every hold gets a fencing token, the key's epoch number, larger
// than that of every earlier hold of the key.
//
// A lock can never promise that its holder is the only process acting on
// the protected resource: a process that pauses (GC, swap, SIGSTOP, a VM
// migration) after checking its hold can act after the lease ended and
// another process took over. Have the resource reject writes carrying a
// token smaller than one it has seen; that is what the tokens are for.
//
// # Assumptions
//
//   - The server answering is the database's primary, and its clock
//     does not jump; expiry is judged in its time through a
//     clockcheck.Estimator, so client clocks may be off by any amount, even
//     hours.
//   - Clocks drift apart no faster than the estimator's bound (500 ppm by
//     default, WithMaxDrift). On Linux the local clocks count time the
//     machine spends suspended (CLOCK_BOOTTIME); elsewhere Go's monotonic
//     clock may not, and there a machine must not be suspended while one
//     of its commands is in flight or while it holds a lock.
//   - On a replica set, writes use majority write concern (the default):
//     a write a stale primary accepts is then never acknowledged.
//   - Nothing but this package writes to the collection. Do not delete lock
//     documents by hand. Dropping the collection while no lock is held or
//     awaited is safe for exclusion, but restarts every key's tokens at 1.
//
// Not assumed: that a command reaches the server promptly, once, or in the
// order it was sent. A request can be applied long after its sender gave
// up on it, and after later requests of the same sender (TCP delivers
// held-back bytes after a stall; the driver abandons operations whose
// requests it has sent when heartbeats time out). Every write is made
// harmless whenever it lands:
//
//   - a stored expiry only grows (renewals use $max), so a late renewal
//     never shortens a hold;
//   - nothing local learns from a reply that came too late: hold
//     deadlines, the cache of what the process knows about each key, and
//     "acquired" results all count from the send time of a reply that
//     arrived in time, and a write whose outcome is unknown makes the
//     process forget what it knew of the key;
//   - a late acquire never counts, and a late prune, release or wake-up
//     event cannot let anyone in.
//
// What a late write can still do: a renewal applied after its epoch
// lapsed and was taken over revives the old, superseded epoch (the store
// evaluates the renewal's "not expired" filter when it applies it, and
// not every MongoDB-compatible server can compare with its own clock
// there). Nobody counts or holds that epoch; a waiter that was watching
// it may wait until its revived expiry, at most one TTL after the renewal
// was sent. On FerretDB, which rewrites a whole document on update, a
// late renewal applied at the very moment of its epoch's release can
// write the epoch back unreleased; the release reads the epoch back when a
// renewal of it had an unknown outcome and releases it again, so at worst
// the key waits for its TTL. timing.go holds the full argument.
//
// # The protocol
//
// A key is a chain of epoch documents, one per hold:
//
//	{_id: "<key>@<epoch>", key, epoch (int64), owner, host, pid,
//	 acquiredAt, expiresAt, released}
//
// with a unique index on {key: 1, epoch: 1}. The newest epoch is the state
// of the lock. Ownership changes hands only by inserting the next epoch: a
// duplicate-key error means another process won it. Compare-and-set
// (findAndModify) is never used for correctness, because it is not atomic
// on every MongoDB-compatible store, while unique-index inserts are.
//
// The next epoch may be inserted only when the newest one is released, or
// has expired in server time: its expiresAt is before the earliest server
// time the estimator can prove. A holder writes expiresAt as the latest
// possible server time when it sends its acquire or renewal, plus the TTL,
// and a renewal only ever raises it. Only an epoch's owner ever updates
// its document (renew, release); a renewal applied in time never extends
// an epoch that is released or has provably expired (another process may
// have taken the key over), and one applied late is harmless (above).
//
// Waiting does not poll hard: a HeldError suggests waiting until the
// holder's epoch can have expired, at most the poll interval
// (WithPollInterval), with jitter.
//
// # Wake-ups
//
// Backend implements dsync.Waiter: a Mutex waiting for a key held by
// another process is woken when the holder releases it, instead of by
// polling, if WithWakeups(true) is given (the default is off for now, see
// below). Each Backend that has held or awaited a lock follows a capped
// collection of events (the lock collection's name + "_events") with one
// tailable-await cursor in one goroutine.
//
//   - A waiting process announces itself once per key when it starts
//     waiting (again every ten safety poll intervals while it waits).
//     Every process keeps, from these events, the queue of processes
//     waiting for each key, in the order they announced themselves.
//   - A holder that knows of a waiting process names the first in line in
//     a "released" event after its release, and for 250 ms does not take
//     the key again itself. Only the named process wakes, and only one of
//     its waiters (the one that has waited longest): a release costs one
//     acquisition attempt, an insert and a read, however many wait, and
//     the turns go round in order instead of to whoever polls first.
//   - A named process with no waiter left passes the turn to the next in
//     line. A named process that died costs the others at most the safety
//     poll interval.
//   - Waiters in the holder's own process are woken directly when no other
//     process waits.
//
// An announced waiter sleeps until the holder's epoch can have expired,
// at most the safety poll interval (WithSafetyPoll, 5 s), so an idle
// waiting process costs a read per safety interval, a getMore per two and
// an insert per ten, plus a getMore for each event any process sends. Events are hints: the epoch protocol alone decides
// who holds a key, and a lost event costs at most the safety poll
// interval. When the event stream is unavailable (no capped collections
// or tailable cursors, a killed cursor, a restarted server) waiters poll
// as without wake-ups and the stream is reopened with backoff; the first
// failure is logged.
//
// FerretDB 1.24 implements a waiting tailable cursor by re-reading the
// whole events collection every 10 ms, and answers 10 ms after it finds a
// new event, so an event takes 10 to 20 ms to arrive there (bench/
// measures it), and each following process costs the server CPU: on 2
// cores, about 5% of a core per process with one event in the collection,
// about 25% with 35. The embedded server never trims capped collections;
// the backend therefore deletes events itself, keeping about the last
// two seconds' and the announcements still in force. With 16 processes
// waiting on one small FerretDB server, handoffs are slower than with
// polling. That is why wake-ups are off by default; on MongoDB a
// tailable-await cursor waits for inserts without polling, but that has
// not been measured here yet.
//
// # Costs
//
// An uncontended Lock followed by Unlock costs two commands (an insert
// and an update), plus one delete per 16 acquisitions for pruning: the
// backend remembers what it last learned about each key, so it need not
// read before inserting when the Lock follows its own Unlock within a
// second; later, a Lock costs two reads by _id and an insert. The first Lock of a
// key that never had an epoch is one insert. Renewing any number
// of holds costs one updateMany per renew interval (and one find in the
// rare interval where some renewal did not apply). A waiter re-checks the
// holder's epoch with a read by _id per attempt; when it finds it
// released and the next epoch absent (a second read by _id), it inserts
// the next epoch and reads the released one once more to prove that no
// newer epoch existed. Reads by _id are used because
// FerretDB answers every other query by decoding the whole collection.
//
// # Pruning
//
// Old epochs are deleted in batches, never the newest, nor epoch 1 (which
// lets a key that never had an epoch be locked without a read). Because a
// process may decide on a slightly stale view of a key, deleting must wait
// long enough that no such decision can insert into the hole a deletion
// leaves. The argument, and the timing rules it relies on, are in
// timing.go. One consequence: an acquire whose reply takes longer than 2 s
// may not count (ErrSlowReply), and a key keeps about 6 s of history.
//
// # FerretDB
//
// The protocol uses only inserts, updates with $set and $max, finds,
// deletes and a unique index, so it works on FerretDB (which lacks
// pipeline updates, $$NOW, $expr, TTL indexes and transactions, and whose
// findAndModify is not atomic). FerretDB 1.24 with the SQLite handler
// answers queries other than {_id: value} by decoding every document of
// the collection, and updates each matched document with a statement that
// scans the collection (its _id index goes unused): costs there grow with
// the number of lock documents. Renewing 1,000 locks takes about 10 s, and
// holds SQLite's single writer meanwhile, delaying every other write. Under
// concurrent writes FerretDB may answer "database is locked"; Release
// retries that, other calls report it as an error.
package dsyncmongo
