package driver

import "errors"

// Errors of the contract. Match them with errors.Is.
var (
	// ErrExists is what an insert returns when a document with the same
	// ID exists. It is an answer, not a failure.
	ErrExists = errors.New("driver: document exists")

	// ErrClosed is what a store's calls fail with after its Close, where
	// they fail (the MongoDB store's do; the in-memory store's go on). It
	// is the one closed error of the library: dsync.ErrClosed (a closed
	// Client), leader.ErrClosed (a closed Election or Partition) and
	// dsyncmongo.ErrClosed are this value, so that one errors.Is check
	// matches whichever part was closed first.
	ErrClosed = errors.New("dsync: closed")

	// ErrAfterUnsupported is what a listing with KeyQuery.After fails
	// with on a store of OrderFirstUse.
	ErrAfterUnsupported = errors.New("driver: this store lists keys in the order of their first use, and cannot resume a listing after a key")

	// ErrRunsUnsupported is what GetRun (RunReader) answers, before any
	// I/O, on a store that cannot read runs cheaply on this server: the
	// caller reads by ID instead.
	ErrRunsUnsupported = errors.New("driver: this store does not read runs of a key's queue on this server")
)
