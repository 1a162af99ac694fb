package chain

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Kinds of chain documents.
const (
	// KindClaim is an epoch: a place in a key's queue, named by its session.
	KindClaim = "claim"
	// KindRelease ends an epoch whose owner held it: everything below it
	// had ended when it began to hold.
	KindRelease = "release"
	// KindWithdraw ends an epoch whose owner gave it up before holding it,
	// or never knew whether its insert had been applied.
	KindWithdraw = "withdraw"
	// KindDead ends an epoch whose session another process proved expired
	// in server time.
	KindDead = "dead"
)

// ErrExists is what Store.Insert returns when a document with the same ID
// exists: another process won that epoch, or the marker is already there.
// It is an answer, not a failure.
var ErrExists = errors.New("chain: document exists")

// Doc is a document of a key's chain: the claim of an epoch, or the marker
// that ends one. Every insert of a claim carries a nonce of its own, and a
// marker ends only the claim with its nonce: a withdrawal of an insert
// whose outcome was unknown must not end a later claim of the same epoch,
// by another process or by the same session.
type Doc struct {
	ID      string
	Key     string
	Epoch   uint64
	Kind    string
	Nonce   string // unique per claim insert (for a marker: of the claim it ends)
	Session string // the session of the claim (for a marker: of the claim it ends)
	Owner   string // claims only: the Mutex or candidate that claimed
}

// ClaimID is the ID of epoch's claim document: unique per (key, epoch),
// so the store's unique ID index lets only one insert of an epoch succeed.
func ClaimID(key string, epoch uint64) string {
	return key + "@" + strconv.FormatUint(epoch, 10)
}

// EndID is the ID of the marker that ends the claim of epoch inserted
// with nonce. One marker per claim: whichever end is recorded first
// stands, and every kind means "ended".
func EndID(key string, epoch uint64, nonce string) string {
	return ClaimID(key, epoch) + "~" + nonce
}

// Session is a session document: a lease that every claim naming it shares.
type Session struct {
	ID        string
	ExpiresAt time.Time // server time; only ever raised
}

// Store is what a backend provides to the protocol: exclusive inserts,
// point reads, one newest-first read, and a session update that only
// raises an expiry. Every error other than ErrExists from Insert means the
// outcome is unknown: the write may be applied now, later, or never.
type Store interface {
	// Insert creates d, or returns ErrExists if d.ID exists.
	Insert(ctx context.Context, d Doc) error
	// Get reads the document with the given ID; found is false if absent.
	Get(ctx context.Context, id string) (d Doc, found bool, err error)
	// Newest reads the claim of key with the highest epoch.
	Newest(ctx context.Context, key string) (d Doc, found bool, err error)
	// Floor reads key's floor: every epoch below it has ended. 0 if none.
	Floor(ctx context.Context, key string) (uint64, error)
	// RaiseFloor sets key's floor to at least floor (never lowers it).
	RaiseFloor(ctx context.Context, key string, floor uint64) error
	// Prune deletes key's claims and markers with 1 < epoch < below.
	Prune(ctx context.Context, key string, below uint64) error

	// InsertSession creates a session document.
	InsertSession(ctx context.Context, s Session) error
	// RenewSession raises the session's expiry to at least expires; found
	// is false if the session document does not exist.
	RenewSession(ctx context.Context, id string, expires time.Time) (found bool, err error)
	// GetSession reads a session document.
	GetSession(ctx context.Context, id string) (s Session, found bool, err error)
}

// Interval is a range of possible server times.
type Interval struct {
	Earliest, Latest time.Time
}

// Clock gives the engine the server's time, as an interval that certainly
// contains it, and the local monotonic time that local deadlines and the
// protocol's durations are measured on.
type Clock interface {
	ServerNow() Interval
	Mono() time.Duration
}
