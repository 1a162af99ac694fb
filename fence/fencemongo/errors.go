package fencemongo

import (
	"errors"

	"github.com/go-dsync/dsync/fence"
)

// Sentinel errors. Match them with errors.Is; ErrFenced is returned
// wrapped, with the token at fault.
var (
	// ErrFenced is returned by an operation of a Fenced collection on a
	// document whose fence is above the Fenced's token: a later holder
	// has read, written or deleted it, or found it missing, so this
	// holder's hold has ended (its process was paused, or its lease
	// lost). The operation's work was not done: it read, changed,
	// inserted or deleted no document. Only its fence may have moved: a
	// FindOne, UpdateOne, ReplaceOne or DeleteOne by _id that first found
	// nothing raises the _id's fence to its token before it tries again,
	// and fails with ErrFenced if a later holder came between the two.
	// An error that matches ErrFenced matches fence.ErrStale too, as
	// every fence's refusal does (it is not a *fence.StaleError: a
	// Fenced fences documents, not keys).
	ErrFenced error = &staleSentinel{"fencemongo: fenced out: a holder with a later token has used the document"}

	// ErrFenceNotAtomic is returned by Fence when the collection's
	// server is FerretDB (as under `dsync server`), which cannot apply a
	// conditional update atomically, unless WithNonAtomicFence is given.
	// Nothing was read or written. Fence a resource there by passing the
	// token to it instead (see the package documentation).
	ErrFenceNotAtomic = errors.New("fencemongo: Fence needs MongoDB: the server is FerretDB, which applies an update as a read and a later write, so a stale holder's write could land after a later holder's read")

	// ErrNotInTransaction is returned, wrapped with what is missing, by
	// CheckTx called with a ctx that carries no session, or whose
	// session has no transaction running or is of another driver client
	// than the marks collection's, before any I/O.
	ErrNotInTransaction = errors.New("fencemongo: CheckTx needs a transaction running in ctx's session (the ctx of Session.WithTransaction's callback)")

	// ErrNoTransactions is returned by CheckTx on a server without
	// multi-document transactions: FerretDB, refused before any write,
	// and a standalone mongod, whose refusal it wraps. Nothing was
	// written.
	ErrNoTransactions = errors.New("fencemongo: the server has no transactions: CheckTx needs a MongoDB replica set or sharded cluster")
)

// A staleSentinel is a sentinel error that matches fence.ErrStale too.
type staleSentinel struct{ msg string }

func (e *staleSentinel) Error() string { return e.msg }

// Is reports whether target is fence.ErrStale.
func (e *staleSentinel) Is(target error) bool { return target == fence.ErrStale }
