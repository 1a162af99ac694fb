package dsyncmongo

import (
	"errors"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Sentinel errors. Match them with errors.Is; most are returned wrapped,
// with the key or the value at fault.
var (
	// ErrNilDatabase is returned by NewStore when given a nil database.
	ErrNilDatabase = errors.New("dsyncmongo: nil database")

	// ErrInvalidDatabase is returned by NewStore (and CheckDatabaseName)
	// for a database whose name MongoDB refuses, before any I/O.
	ErrInvalidDatabase = errors.New("dsyncmongo: invalid database name")

	// ErrEmptyKey, ErrKeyTooLong and ErrInvalidKey reject a key before any
	// I/O. Keys are limited to MaxKeyLen bytes so that every lock document
	// fits the index key limits of every MongoDB version.
	ErrEmptyKey   = errors.New("dsyncmongo: empty key")
	ErrKeyTooLong = errors.New("dsyncmongo: key too long")
	ErrInvalidKey = errors.New("dsyncmongo: key is not valid UTF-8")

	// ErrClosed is returned by the store's calls made after Close (which
	// the Client's Close calls). It is driver.ErrClosed, the same value as
	// dsync.ErrClosed.
	ErrClosed = driver.ErrClosed

	// ErrWriteTimeout matches a write the server did not acknowledge within
	// the write timeout. See WithWriteTimeout. On a replica set, most
	// likely a majority of its members cannot be reached, so the majority
	// write concern cannot be satisfied. Its outcome is unknown.
	ErrWriteTimeout = errors.New("dsyncmongo: write not acknowledged within the write timeout")

	// ErrIndex matches a lock collection whose indexes are not usable. It
	// matches the failure to create the lock collection's index on {key: 1,
	// kind: 1, epoch: 1} when no equivalent index exists. It matches too a
	// unique index on the collection that would refuse end markers (see
	// WithIndexManagement). The error names the index and what to do.
	ErrIndex = errors.New("dsyncmongo: the lock collection's indexes are not usable")

	// ErrSharded matches a collection sharded in a way that breaks
	// exclusion. It is a lock collection sharded on a field that its
	// documents' _ids do not determine, or a sessions collection sharded on
	// anything but _id. It is found through a mongos before the first call
	// uses them. Two claims of one epoch could then both count. The error
	// names the collection and its shard key.
	ErrSharded = errors.New("dsyncmongo: a collection is sharded in a way that breaks exclusion")
)
