// Package fencemongo checks a lock's fencing token in MongoDB itself.
// It is no fence on FerretDB, nor for documents it does not touch (see
// "Why it refuses FerretDB" and "What it cannot do", below).
//
// It checks the token on the documents a critical section reads and
// writes. Fence returns a collection seen through one hold's token. Its
// FindOne raises the document's fence to the token, and its writes apply
// only while no later token has done so. A holder paused past its lease
// (GC, SIGSTOP, a suspended VM) that wakes and writes gets ErrFenced
// instead of overwriting the next holder's work. In a transaction,
// CheckTx fences every document the transaction writes at once (see "In a
// transaction", below).
//
// A hold's token (dsync.Mutex.Token, dsync.TokenOf, leader.Info.Token)
// protects a resource only under two conditions. The resource compares it
// with the token of every later holder. And a later holder shows its
// token before it reads. Without the second, a holder paused past its
// lease can write after the next holder has read. The next holder then
// overwrites that write with a value computed from what it read before (a
// lost update). A
// Fenced collection does both. Every document it touches carries a fence
// (the field FenceField): the highest token that read or wrote it. Each
// operation raises the fence to the Fenced's token and does its work in
// one single-document command that applies only while the fence is at
// most that token, so an operation with a lower token than the
// document's fence changes nothing and fails with ErrFenced. (One by _id
// that finds nothing raises the _id's fence and tries again, below; if a
// holder with a later token acts between the two, it fails with ErrFenced
// having raised the fence, to a token that was held, and done nothing
// else.)
//
// A fence also stays where a later holder found nothing. A FindOne,
// UpdateOne, ReplaceOne or DeleteOne whose filter names one _id ({_id: v}
// or {_id: {$eq: v}} at its top level) and matches nothing raises the
// fence of that _id before it answers, keeping it in a placeholder (a
// document with only the _id, the fence and AbsentField) where no
// document has the _id; DeleteOne leaves such a placeholder in place of
// the document it deletes. InsertOne applies only where no document has
// its _id, over a placeholder whose fence is at most the token or none.
// Fenced operations take placeholders for missing documents.
//
// # What it guarantees
//
// On MongoDB (a replica set, a sharded cluster or a standalone server):
//   - once a holder's FindOne, UpdateOne, ReplaceOne or DeleteOne of a
//     document has returned, no operation of a holder with a lower token
//     on that document applies, however late it reaches the server;
//   - once one of them by _id has returned, whatever it found, no
//     InsertOne of that _id by a holder with a lower token applies either.
//
// In a sharded cluster, the second holds only in collections unsharded or
// sharded on _id. Elsewhere _id is not unique across shards, so an insert
// is not stopped by a placeholder on another shard. In such collections,
// servers before 7.0 also refuse the upserts by _id alone that keep the
// fence.
//
// The commands use the majority write concern, so an acknowledged fence
// raise or write is not rolled back by a failover. FindOne reads by
// raising the fence (findAndModify), on the primary, so what it returns is
// the latest majority-committed document.
//
// # In a transaction
//
// On a replica set or a sharded cluster, CheckTx keeps the contract of
// package fence in the caller's own transaction. Called first in the
// transaction (in Session.WithTransaction's callback), it writes the
// key's document in a collection of marks: _id the key, MarkField the
// highest token accepted, ChecksField a count of the checks. It raises
// the mark to the token, or refuses a lower token with a
// *fence.StaleError (matching fence.ErrStale) that carries the mark. The
// transaction's writes, of any documents in any collections, commit only
// with the raise: they are written under one check, and carry no field
// of the fence's.
//
// MongoDB runs a transaction on a snapshot, and fails a write of a
// document that another transaction has written since that snapshot, or
// is writing, with a WriteConflict labelled TransientTransactionError,
// which WithTransaction retries from the start. Every check writes the
// key's document, even under a token equal to the mark, so of two
// transactions that check one key, one commits only once the other has
// ended, and then in a snapshot that shows the other's raise: a later
// holder is accepted, a stale one refused, however late its transaction
// runs. A refusal is the server's duplicate key error on the key's _id
// (the upsert finds no document of the key with a mark at most the
// token, and the key's document refuses the insert); it aborts the
// transaction on the server, so none of its writes commit, even those
// made before the check. Return it from WithTransaction's callback.
//
// The cost is one update in the transaction, one round trip (and a
// buildInfo once per driver client, outside it); a refusal reads the
// mark once more, outside the transaction, for its error.
// Create the collection of marks before the transactions, unsharded or
// sharded on _id, and let nothing but CheckTx write it. A fence holds
// through a failover only if the transaction commits with the majority
// write concern, MongoDB's default since 5.0 (some deployments with
// arbiters aside). In a sharded cluster, a transaction that reads
// documents on other shards than the collection of marks should use the
// snapshot read concern: under the others, its reads on each shard come
// from a snapshot of that shard's own. Writes of the protected
// documents outside fenced transactions are not checked. FerretDB and a
// standalone mongod have no transactions: CheckTx refuses them with
// ErrNoTransactions.
//
// # Why it refuses FerretDB
//
// FerretDB (what `dsync server` runs) applies an update as a read and a
// later, unconditional write of the whole document, so a stale holder's
// update that read the document before the next holder's raise can write
// after it, undoing the raise and the next holder's fence with it. No
// command that changes a document in place can be made safe there against
// a request that lands late; only inserts under a unique index are
// atomic, which would need the data itself kept as inserted versions. So
// Fence asks the server once per driver client and refuses FerretDB at
// once with ErrFenceNotAtomic, before any read or write, unless
// WithNonAtomicFence accepts a fence that holds only while two holders'
// operations do not overlap. There, pass the token to a resource that
// checks it instead.
//
// # What it cannot do
//
// It cannot fence:
//   - documents it does not touch: a critical section that reads one
//     document and writes another must read the second through FindOne
//     first, or write both;
//   - an absence that a filter naming no single _id found: there is no _id
//     to keep it on, so a stale holder's InsertOne of a matching document
//     still applies (give such documents a deterministic _id and read
//     them by it);
//   - the collection's own writers: an unfenced write is not checked, an
//     unfenced delete of a document or placeholder takes its fence away,
//     and an unfenced upsert takes a placeholder for a document.
//
// Placeholders stay in the collection. Readers of the collection itself
// skip them with {AbsentField: {$exists: false}}. A unique index on
// another field must skip them (sparse, or partial on {field: {$exists:
// true}}), and so must a schema validator that requires fields. To remove
// placeholders, delete them with AbsentField once no
// holder of a token below their fence can still be running, its writes
// included.
package fencemongo
