// Package dsyncmongo is dsync's driver for MongoDB and MongoDB-compatible
// stores such as FerretDB. Do not use it where the Assumptions below do not
// hold, such as on a primary whose clock jumps; for unit tests, use
// dsync/driver/memory.
//
// [NewStore] returns a [Store] (a driver.Store with every role of the
// contract, its feed among them) that keeps a process's locks, and its
// elections, in a database. A dsync.Client runs the protocol over it. The
// Store knows nothing of the protocol, and imports no dsync package but the
// driver contract (dsync/driver).
//
//	store, err := dsyncmongo.NewStore(db) // collection "dsync_locks"
//	...
//	client, err := dsync.NewClient(store)
//	...
//	defer client.Close()
//	mu, err := dsync.NewMutex(client, "nightly-billing")
//
// One Store and one Client per process and database is the intended use:
// every Mutex and Election made on the Client shares one session, renewed
// with one command per renew interval, and one goroutine that follows
// wake-ups. The Client's Close ends every claim made through it, so that
// other processes go on at once, waits for its goroutines and closes the
// store.
//
// # What it stores
//
// Five collections, named after the lock collection (WithCollection):
// the lock collection holds each key's queue of claims and the markers
// that end them, "<collection>_sessions" the processes' sessions,
// "<collection>_events" (a 1 MiB capped collection) wake-up hints,
// "<collection>_keys" the directory of keys that statuspage.Reader.List reads
// (in order of bytes on MongoDB; in the order of first use on FerretDB,
// where resuming a listing after a key is refused), and
// "<collection>_records" the records kept for people (stalls, outages
// ridden through, lock sets' waits and deadlocks), a day each. Every
// process that locks the same keys must use the same collection. The
// repository's docs/deployments.md describes the documents, the
// privileges they need and each kind of deployment; docs/operations.md
// what an operator may do to the collections.
//
// # Guarantees
//
// Those of package dsync, on every deployment below, while the
// assumptions hold:
//
//   - Exclusion, FIFO order and fencing tokens: a claim's epoch is its
//     token, larger than that of every earlier hold of its key.
//   - Late writes are harmless: a request may be applied long after its
//     sender gave up on it, and after the sender's later requests.
//     Ownership changes hands only by inserting documents with
//     deterministic _ids, never by updating another process's document,
//     so nothing rests on an update being atomic (FerretDB's are not).
//   - Clock skew: expiry is judged in the time of the primary that applies
//     the writes, sampled with a write (never with hello, which a router
//     answers), through a clockcheck.Estimator with an error bound. The
//     clocks of the client machines, of mongos routers and of load
//     balancers may be off by any amount.
//   - A Lock+Unlock that nobody contends is two commands; a process
//     renews all its holds, waiting claims and elections with one command
//     per renew interval; a waiter in another process is woken by an
//     event when the claim ahead of it ends, and falls back to polling
//     (dsync.ClientWithPollInterval) where events cannot flow.
//
// # Assumptions
//
//   - The clock of the primary does not jump, and on a replica set (or a
//     shard's) the members' clocks are within the member skew of each
//     other (WithMemberSkew: 100 ms by default on a replica set or through
//     a mongos; MongoDB itself asks for NTP on every member). Where they
//     are further apart, two processes can hold one lock for the
//     difference after a failover.
//   - Clocks drift apart no faster than the estimator's bound
//     (WithMaxDrift). On Linux the local clocks count time the machine
//     spends suspended; elsewhere a machine must not be suspended while
//     one of its commands is in flight or while it holds a lock.
//   - On a replica set, writes use majority write concern (the default):
//     a write a stale primary accepts is then never acknowledged.
//   - Nothing but dsync writes to the lock and sessions collections, and
//     their documents are not deleted by hand, except as
//     docs/operations.md allows (emptying them while no lock is held or
//     awaited starts every key's queue again at a base from the server's
//     clock, above the tokens handed out more than two seconds, plus
//     twice the error bound of the server-time estimate, before the
//     emptying).
//   - The lock collection is sharded, if at all, only on fields its
//     documents' _ids determine (through a mongos, the store's first
//     call checks, and refuses others with ErrSharded).
//
// # Fenced writes
//
// A lock's token protects the user's own MongoDB documents through the
// package github.com/go-dsync/dsync/fence/fencemongo: a collection seen
// through one hold's token, whose writes apply only while no later token
// has read or written the document. It needs MongoDB; on FerretDB (what
// `dsync server` runs) it refuses at once, and the token is passed to a
// resource that checks it instead.
//
// Keys are limited to MaxKeyLen bytes of valid UTF-8. The protocol and its
// safety argument are in the repository's dsync/internal/queue package.
package dsyncmongo
