package fencemongo

import "errors"

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
	ErrFenced = errors.New("fencemongo: fenced out: a holder with a later token has used the document")

	// ErrFenceNotAtomic is returned by Fence when the collection's
	// server is FerretDB (as under `dsync server`), which cannot apply a
	// conditional update atomically, unless WithNonAtomicFence is given.
	// Nothing was read or written. Fence a resource there by passing the
	// token to it instead (see the package documentation).
	ErrFenceNotAtomic = errors.New("fencemongo: Fence needs MongoDB: the server is FerretDB, which applies an update as a read and a later write, so a stale holder's write could land after a later holder's read")
)
