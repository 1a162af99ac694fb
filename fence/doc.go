// Package fence states the fencing contract that dsync's adapters keep
// where the protected data lives.
// Fence a resource through its adapter (below); use this package alone
// only to write an adapter of your own.
//
// It holds what the adapters share: the errors, the bounds of a key and a
// token, and Marks. Marks is the interface of a store of marks for writes
// that do not run in a transaction of the caller's.
//
// A lease cannot stop a holder that was paused past it (a GC pause,
// SIGSTOP, a suspended VM) from writing once it wakes, after the next
// holder took over. Only the resource can: it refuses writes whose token
// is older than one it has seen. dsync gives every hold a token that
// rises from hold to hold of a key (dsync.Mutex.Token, dsync.TokenOf,
// leader.Info.Token for an election's term or a Partition shard's), and
// the adapters keep the contract below for it.
//
// # The contract
//
// A fenced resource keeps, per key, a mark: the highest token it has
// accepted for that key, none at first. A write made under (key, token)
// applies only if the token is at least the key's mark, and then raises
// the mark to the token, atomically with the write. No write under a
// lower token applies after it, however late it arrives. A write refused
// changes nothing. A refusal is an error that matches ErrStale
// (errors.Is). It means a later holder of the key has written, so this
// holder's hold has ended.
//
// A token equal to the mark is accepted: one hold may write many times.
// A holder must show its token before it reads what it will write from:
// a check at the start of its transaction, then the reads and the
// writes, then the commit. Checking only at the end lets a stale holder
// overwrite the next holder's work with a value computed from what it
// read before (a lost update).
//
// # The adapters
//
//   - fence/fencesql: one statement at the start of the caller's own
//     database/sql transaction (PostgreSQL, MySQL and MariaDB, SQLite)
//     raises the key's mark or refuses, and holds the mark's row lock to
//     the commit.
//   - fence/fencehttp: the holder's client carries the key and token
//     with each request; the service's middleware admits the request
//     through a Marks before the handler runs.
//   - fence/fencemongo: the mark in a MongoDB transaction (CheckTx), or
//     a fence on each document outside one (Fence).
//
// fence/fencetest is the conformance suite that every adapter passes. It
// is public, so that an adapter of one's own can be checked the same way.
//
// A key is any non-empty string of at most MaxKeyLen bytes. It names the
// resource, and is usually the lock's name. A token is at least 1 and at
// most MaxToken (the SQL stores keep it in a signed 64-bit column).
package fence
