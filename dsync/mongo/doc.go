// Package dsyncmongo is the MongoDB backend of dsync: distributed locks
// whose state lives in a MongoDB (or MongoDB-compatible, such as FerretDB)
// database.
//
//	locks, err := dsyncmongo.New(db) // collection "dsync_locks"
//	...
//	defer locks.Close()
//	mu, err := dsync.NewMutex(locks, "nightly-billing")
//
// One Backend per process and database is the intended use: all its
// Mutexes share one session, renewed with one command per interval.
//
// # What it stores
//
// Three collections, named after the lock collection (WithCollection,
// default "dsync_locks"). The lock collection holds, for each key, a queue
// of claims, the end markers that end them, and its floors:
//
//	{_id: "<key>@<epoch>", kind: "claim", key, epoch, nonce, session, owner, host, pid, at, ttl, exp}
//	{_id: "<key>@<epoch>#<nonce>", kind: "shadow", key, epoch, nonce, session, at}
//	{_id: "<key>@<epoch>~<nonce>", kind: "release"|"withdraw"|"dead", key, epoch, nonce, session, at}
//	{_id: "<key>#floor#<epoch, 20 digits>", kind: "floor", key, epoch, nonce, at}
//
// with a non-unique index on {key: 1, kind: 1, epoch: 1}, which serves the
// reads of a key's newest claim and highest floor, and pruning. A claim's
// epoch is its fencing token; its shadow is inserted with it, in one
// ordered insert, and is what the next claim of the same process checks
// (see "Protocol"); "ttl" and "exp" are its session's TTL (ms) and the
// expiry its owner had seen confirmed. "at" is the latest possible server
// time when the document was sent. A key's floor is its highest floor
// document whose claim (the nonce's) exists: every epoch below it has
// ended.
//
// "<collection>_sessions" holds a document per process session, {_id,
// expiresAt, host, pid, started}, and one more, {_id: "<session>~<n>", ...},
// each time a renewal's outcome was unknown (see "Protocol"); the
// session's expiry is the highest of its documents'. They are updated by
// _id and read by _id ranges. Opening a session deletes the documents that
// expired over an hour ago. The document {_id: "#clock", now} is what the
// server-time samples update (see "Server time").
//
// "<collection>_events" is a small capped collection (1 MiB) of wake-up
// events (see "Wake-ups").
//
// # Guarantees
//
// While the package's assumptions hold (below):
//
//   - Exclusion: while a hold is valid (until its session's local
//     deadline, see dsync), no other hold of its key is valid.
//   - Order: claims hold in epoch order, that is in the order their Locks
//     queued (FIFO); TryLock never queues. A Mutex that locks again less
//     than the poll interval after it took a key over lets the process it
//     took over from queue first, if that one locks again by then, so
//     processes that lock and unlock in a loop take turns in a strict
//     rotation (two Locks called at once otherwise queue in the order
//     their inserts land).
//   - Tokens: every hold's token, its claim's epoch, is larger than that
//     of every earlier hold of the key, and never reused.
//   - Sessions: a process renews one session for all its holds and
//     waiting claims. Another process moves past a claim whose owner
//     stopped renewing only after that claim's session has expired in the
//     server's time, and it records that with a "dead" marker, so a
//     renewal that arrives later cannot revive the claim.
//   - Late writes: a request may be applied long after its sender gave up
//     on it, and after the sender's later requests (a stalled connection
//     delivers its bytes late; the driver abandons operations whose
//     requests it has sent). Every write is harmless whenever it lands
//     (see "Protocol").
//   - Clock skew: expiry is judged in the server's time through a
//     clockcheck.Estimator, with an error bound, so the clocks of the
//     client machines may be off by any amount, even hours; so may the
//     clocks of mongos routers and load balancers (see "Server time").
//
// A lock can never promise that its holder is the only process acting on
// the protected resource: a process that pauses (GC, swap, SIGSTOP, a VM
// migration) after checking its hold can act after the lease ended and
// another process took over. Have the resource reject writes carrying a
// token smaller than one it has seen; that is what the tokens are for.
//
// # Assumptions
//
//   - The clock of the primary that applies the writes does not jump,
//     and on a replica set (or a shard's) the members' clocks are within
//     the member skew of each other (WithMemberSkew: 100 ms by default on
//     a replica set or through a mongos; MongoDB itself asks for NTP on
//     every member). Where they are further apart, two processes can hold
//     one lock for the difference after a failover.
//   - Clocks drift apart no faster than the estimator's bound (500 ppm by
//     default, WithMaxDrift). On Linux the local clocks count time the
//     machine spends suspended (CLOCK_BOOTTIME); elsewhere Go's monotonic
//     clock may not, and there a machine must not be suspended while one
//     of its commands is in flight or while it holds a lock.
//   - On a replica set, writes use majority write concern (the default):
//     a write a stale primary accepts is then never acknowledged.
//   - Nothing but this package writes to the lock and sessions
//     collections, and their documents are not deleted by hand. Emptying or
//     dropping them while no lock is held or awaited, restoring a backup
//     with the processes stopped, a TTL index on the sessions collection:
//     the repository's docs/operations.md says what an operator may do to
//     the collections and what each costs (emptying them restarts every
//     key's tokens at 1).
//
// # Protocol
//
// Ownership changes hands only by inserting documents with deterministic
// _ids, never by updating another process's document or by
// compare-and-set (findAndModify is not atomic on every MongoDB-compatible
// store; a duplicate key on _id is).
//
// Lock inserts a claim of the key's next epoch, N+1, where N is an epoch
// known to have existed; a duplicate key means another process took that
// place in the queue, and it tries the next. The claim holds once every
// lower epoch has ended, and only on what the store shows after the
// insert: when the process released N itself, the insert carries N's
// shadow again, and its duplicate key proves N's claim still there (one
// command); otherwise the waiter walks down from its claim, reading each
// lower claim's end marker, and stops at a release (everything below it
// had ended when it held) or at a gap that a floor which counts says was
// pruned, then reads its own claim back. A claim without a marker whose
// session has expired in server time gets a "dead" marker from the
// walker. Unlock inserts a "release" marker; a waiter that gives up, or a
// claim insert whose outcome is unknown, gets a "withdraw" marker, which
// names the claim's nonce, so it never ends another claim of the same
// epoch. A claim that finds the store lost what its process knew (the
// collections emptied or restored) gives itself up and queues again.
//
// A session's owner trusts it until its local deadline: the send time of
// its last renewal confirmed in time, plus the TTL, minus TTL/20. A
// renewal raises the stored expiry ($max) to the latest possible server
// time at sending plus the TTL, so the owner's deadline passes before the
// expiry any other process can observe: by the time a walker proves the
// session expired, its owner has stopped holding. A renewal confirmed after
// the deadline does not count; the session is retired for good.
//
// Updates are not atomic everywhere: FerretDB 1.24 reads the document,
// then writes it whole in a separate transaction, so of two updates of one
// document applied at once the one that read first can write back what the
// other raised (16 concurrent $max raises of one field keep a lower value
// than the highest in 24 rounds of 30). So no document is ever updated by
// two requests that may be in flight together. A session document is
// updated only by its owner, each renewal sent after the last one's reply;
// once a renewal fails, its update may still be applied at any time, so
// that document is never updated again: the renewal inserts the session's
// next document, "<session>~<n>", and later renewals update that one.
// Floors are inserted, one document per floor.
//
// Why late writes are harmless: a renewal only raises an expiry, and
// cannot undo a dead marker already written; a marker states a fact that
// stays true (the owner held, will never hold, or stopped trusting its
// session); a claim insert of unknown outcome is withdrawn by its nonce
// and its owner forgets what it knew of the key; a floor document states a
// fact that stays true, and a prune deletes only below a floor, which
// covers only ended epochs, and keeps that floor's document, so a key's
// floor only rises.
//
// Pruning: the holder of every 16th epoch raises the key's floor to it
// when it releases, and, at a release of its own at least 6 s later,
// checks that its floor's claim is still there and deletes the claims and
// markers below it sent before the floor was raised (never epoch 1, so a
// key that never had a claim can be locked with one insert). A claim counts only if a floor read proves it
// was inserted above every pruned epoch: a read sent less than 1 s before
// the insert whose reply arrived within 2 s, or else a read after the
// insert. A key thus keeps a few seconds of history.
//
// The full safety argument, and a simulation that replays thousands of
// schedules with delayed, reordered and late-applied writes, crashes and
// pruning, live in the repository's internal/chain package.
//
// # Server time
//
// Expiry is judged in the time of the primary that applies the writes.
// The backend samples it with a write: findAndModify upserts the sessions
// collection's "#clock" document with $currentDate and returns it, so the
// time read is that primary's when it applied the update, within the
// command's round trip, whichever router forwarded it. It never samples
// hello: behind a mongos (sharded clusters, Atlas sharded and serverless,
// often a mongos on every application host) or a load balancer, hello
// answers with the router's clock. Every session renewal is such a sample
// too: a findAndModify of the session document that sets "seen" with
// $currentDate. A sample is taken at the backend's first call (five round
// trips; the fastest counts), then every minute (skipped on a single
// server, such as FerretDB or a standalone mongod, while renewals have
// sampled within the minute), and at once when a command fails in a way
// that says the primary may have changed (a not-primary or shutdown error,
// an error labelled RetryableWriteError, a dropped connection). A failover
// the driver hides (it retries a write once on the new primary by itself)
// is noticed at the next periodic sample; until then, and always, every
// interval is wider by the member skew on each side, so that it holds the
// new primary's time too; with a member skew, every periodic sample
// replaces the one in use, so a failover no command noticed is followed
// within a minute. ServerTime returns the interval in use.
//
// FerretDB counts as one server: $currentDate is the clock of the FerretDB
// process that handles the write. Several FerretDB processes in front of
// one backend database are several clocks, like routers: set
// WithMemberSkew to the bound on their hosts' clock skew.
//
// # Costs
//
//   - An uncontended Lock followed by Unlock: two inserts (the claim with
//     its shadow, and the release marker), plus a read of the key's
//     highest floor at most once a second, and a floor insert, a read of
//     its claim and a prune per 16 epochs. A Lock of a key
//     whose history the process does not know first tries epoch 1, reads
//     the key's newest claim after four duplicate keys, and reads by _id
//     the claims below its own, and their markers, down to a release.
//   - Renewal: one findAndModify of the session document by _id per
//     process and renew interval, however many locks it holds or waits for
//     (an insert after a failed one). It also samples the server's clock.
//   - Server time: five findAndModify round trips (the fastest one
//     counts) at the backend's first call, then five every minute on
//     replica sets and sharded clusters, each an update of one document by
//     _id. On a single server, none while renewals sample it.
//   - A handoff to a waiter in another process, with wake-ups: the release
//     marker, one "ended" event, and the waiter's read of the marker.
//     Without wake-ups, the waiter reads the marker at its next poll.
//   - Locking again less than the poll interval after a takeover: a read
//     by _id of each claim above one's last up to the next claim of the
//     process taken over from, instead of a duplicate-key insert for each;
//     while that claim is not there, another read when an announcement or
//     a claim shows the queue grew, or after 5 ms (doubling after four),
//     for at most the poll interval since the takeover.
//   - Reads and updates of single documents go by _id: FerretDB answers
//     every other query by decoding the whole collection.
//
// # Wake-ups
//
// With wake-ups (WithWakeups, on by default), each Backend that holds or
// waits for a lock follows the events collection with one tailable-await
// cursor in one goroutine. A waiter announces, with a "wait" event, which
// claim it waits for; the owner of that claim, after ending it, appends an
// "ended" event (only if someone announced, so an uncontended Lock+Unlock
// stays at two commands); the waiter wakes and confirms with one read of
// the end marker. Waiters in the owner's own process are woken directly.
// An owner also answers an announcement that arrives after it ended the
// claim (within 10 s). Events are hints, never proof: queues live in the
// lock collection. Against lost events a waiter looks again at doubling
// intervals for a second after announcing itself; past that, a missed
// event costs at most the safety poll interval (WithSafetyPoll, 15 s), and
// a waiter also looks when the claim ahead of it can have expired.
//
// What a process that only waits sends: its session's renewal (every
// third of the TTL); a read of the session of the claim ahead when that
// can have expired (nothing on the server tells of an expiry, so about
// every two thirds of the TTL while the holder lives); a read of the claim
// ahead every safety poll interval; a getMore of the event cursor every
// safety poll interval (every 5 s on FerretDB while other processes wait,
// below), and one more for each event another process sends; its
// announcement again every seven safety poll intervals; and, on replica
// sets and sharded clusters, five server-time samples a minute (see
// "Server time"). Measured with TTL 15 s on FerretDB: 0.43 commands per
// second with one process waiting, 0.55 each with 16 (bench/RESULTS.md,
// "Load of waiting processes").
//
// Fallback: while the stream is down (a killed cursor, a restarted
// server), waiters poll (WithPollInterval, 250 ms) and the stream is
// reopened with backoff; the first failure is logged at level Warn. Where
// wake-ups cannot work at all (see "Deployments"), the backend says so
// once and waiters poll for good.
//
// On FerretDB 1.24 a waiting tailable cursor re-reads the whole events
// collection every 10 ms and answers 10 ms after it finds a new event, so
// an event takes 10 to 20 ms to arrive, and each following process costs
// the server a query every 10 ms over the events kept. Each such query
// also closes again what every earlier query of the same getMore opened,
// so a getMore costs more the longer it waits: on FerretDB, while other
// processes wait, a getMore waits at most 5 s (with 16 processes waiting
// the embedded FerretDB used 61% of a core, against 141 to 159% with
// getMores of 15 s). FerretDB 1.24 also
// loses events now and then (a cursor can skip an event inserted while it
// reads: a few in a thousand under load), which the re-checks above
// absorb. FerretDB does not bound capped collections by itself (the
// embedded server never does), so there a process that sent an event
// deletes, at most every 250 ms, the events its own cursor returned 250 ms
// or more ago, except the newest (a FerretDB cursor whose last event is
// deleted fails). MongoDB bounds a capped collection itself, and there the
// backend deletes nothing.
//
// # Deployments
//
// What the backend needs from the database, and how it copes when a
// deployment does not give it:
//
//   - Privileges: find, insert, update and remove on the lock and sessions
//     collections; createIndex and listIndexes on the lock collection
//     unless index management is off; with wake-ups, createCollection,
//     insert and find on the events collection (and listCollections, and
//     remove on FerretDB). The server-time samples are an update (upsert)
//     of the sessions collection, covered above; hello and buildInfo need
//     no privilege. Through a mongos, find on config.collections (or else
//     collStats on the two collections) to check their shard keys.
//   - The index on {key: 1, kind: 1, epoch: 1} is created by the first
//     call that needs the collection. If that fails (no createIndex
//     privilege, or an index on the same keys under another name or with
//     other options), an equivalent existing index (on exactly those keys,
//     not unique, no partial filter, no collation, not hidden), found with
//     listIndexes, will do; otherwise calls fail with ErrIndex, naming the
//     index and the privilege. A unique index on some of key, kind and
//     epoch only would refuse end markers: calls fail with ErrIndex naming
//     it until it is dropped. A collection written by an older dsync has
//     one, "key_1_epoch_1". WithIndexManagement(false) leaves indexes to
//     an administrator.
//   - Writes: each write may take at most the write timeout to be
//     acknowledged (WithWriteTimeout, 1 s), including the wait for the
//     majority write concern, so a replica set that cannot reach a
//     majority makes calls fail with ErrWriteTimeout within a second
//     instead of hanging until their contexts end. Not on FerretDB, which
//     does not replicate; the backend tells FerretDB by its buildInfo
//     reply.
//   - Retries: a session renewal (a findAndModify with $max, which the driver
//     retries once itself only where retryable writes are supported:
//     replica sets, not standalone servers or FerretDB) that fails is
//     followed at once by the insert of the session's next document (see
//     "Protocol"). An end marker's insert is tried up to three times on a
//     transient failure: an error the server labels RetryableWriteError
//     (failovers, shutdowns), a write conflict, FerretDB's "database is
//     locked" (SQLITE_BUSY) or "no such table" (while other connections
//     create the collection), or a dropped connection (a duplicate key
//     then means an earlier try landed); it is otherwise sent again before
//     the next renewal. Both are harmless when applied twice or late. A claim's insert is never sent
//     again: its outcome is unknown, so it is withdrawn.
//   - Reads and writes of the lock and sessions collections go to the
//     primary, at read concern local and the backend's write concern,
//     whatever the client's or database's settings (Backend.Collection).
//   - Wake-ups need a capped collection and tailable cursors. Where the
//     events collection exists but is not capped, or the server refuses
//     capped collections or tailable cursors (the Stable API in strict
//     mode, Amazon DocumentDB, Atlas serverless), the backend says so once,
//     at level Warn, and waiters poll from then on.
//   - Sharding: the lock collection may be sharded only on fields that a
//     document's _id determines ({key: 1} or {key: "hashed"}, or _id):
//     then all the inserts of one _id reach one shard, whose unique _id
//     index admits one. Sharded on anything else (owner, session, at),
//     two claims of one epoch could land on two shards and both count. The
//     sessions collection may be sharded on _id only. Through a mongos the
//     backend reads both shard keys before its first call and refuses
//     others with ErrSharded; a collection sharded later, while backends
//     run, is not checked again.
//
// Per deployment:
//
//   - Standalone server, FerretDB: everything works; no member skew. On
//     FerretDB writes have no write timeout (it does not replicate) and
//     the backend trims the events collection itself (see "Wake-ups").
//   - Replica set (self-managed, Atlas dedicated M10 and up): everything
//     works. Writes at majority with the write timeout; samples of the
//     primary's clock, with the 100 ms member skew, taken again at once
//     when a command sees a failover. A primary-secondary-arbiter set that
//     lost its secondary cannot acknowledge majority writes: calls fail
//     with ErrWriteTimeout until it is back.
//   - Sharded cluster through mongos (self-managed, Atlas sharded):
//     works with the two collections unsharded (they live on the
//     database's primary shard) or sharded as above; refused (ErrSharded)
//     when sharded otherwise, or sharded with a shard key the backend may
//     not read. If neither config.collections nor collStats answers, calls
//     fail (not with ErrSharded) until one does. Samples come from the primary of the shard that holds the
//     sessions collection, never from a router.
//   - Atlas shared tiers (M0, Flex): a replica set as above. Where
//     creating the capped events collection is refused, waiters poll.
//   - Atlas serverless (behind a load balancer): locks work, sampled
//     through the writes as everywhere; no capped collections, so waiters
//     poll.
//   - Amazon DocumentDB: the commands the locks use (inserts, updates
//     with $max, finds, deletes, a non-unique index, findAndModify with
//     $currentDate) are documented as supported; it has no tailable
//     cursors, so waiters poll. The member skew applies as on a replica
//     set.
//   - Azure Cosmos DB for MongoDB: the same commands are documented as
//     supported; no capped collections or tailable cursors, so waiters
//     poll; its request-rate errors (16500) are reported as errors, not
//     retried.
//
// DocumentDB, Cosmos DB and Atlas were not run here: treat them as
// unverified until the test suite has run against them (MONGODB_URI).
//
// # FerretDB
//
// The protocol uses only inserts, updates with $max of documents no other
// update can be applied with, finds by _id, sorted finds, deletes and a
// non-unique index, so it works on FerretDB (which lacks pipeline updates,
// $$NOW, $expr, TTL indexes and transactions, and whose findAndModify and
// updates are not atomic). FerretDB 1.24 with the SQLite handler answers
// queries other than {_id: value} by decoding every document of the
// collection: the newest-claim and floor reads and pruning cost in
// proportion to the lock collection's size, which pruning keeps small, and
// a renewal, a findAndModify by _id, and a read of a session's documents in
// proportion to the sessions collection's. Under concurrent writes FerretDB may answer "database is
// locked"; renewals and end markers retry that (see "Deployments"), other
// calls report it as an error.
package dsyncmongo
