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
	// KindShadow is a claim's shadow: a document inserted with the claim,
	// in the same request, under an ID that names the claim's nonce
	// (ShadowID). A claim is inserted once and never sent again, so its
	// shadow exists only in a store that holds the claim: a release marker
	// cannot vouch for that, since a marker sent again after an unknown
	// outcome may land in a store emptied since (see Claim).
	KindShadow = "shadow"
)

// ErrExists is what Store.Insert returns when a document with the same ID
// exists: another process won that epoch, or the marker is already there.
// It is an answer, not a failure.
var ErrExists = errors.New("chain: document exists")

// ErrReset reports that the store no longer holds what this process knew
// of a key: its collections were emptied, dropped or restored from a
// backup while the process ran. The claim the call was about has been
// given up (withdrawn, or left to end with its session); what the engine
// knew of every key is forgotten. Check the session (it may be gone too)
// and claim again.
var ErrReset = errors.New("chain: the store lost this key's history (emptied or restored)")

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
	// Sent is the latest possible server time when the document was sent:
	// a prune deletes only documents sent before the floor it prunes below
	// was raised (see Store.Prune).
	Sent time.Time
	// Claims only: the session's TTL, and the expiry its owner had seen
	// confirmed when it claimed. A walker never judges the claim's
	// session expired before Exp, whatever the session's documents say
	// (they may have been dropped, or restored older), and waits a TTL
	// before it takes a session whose documents are all gone for dead.
	// Zero in claims written before these fields existed.
	TTL time.Duration
	Exp time.Time
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

// ShadowID is the ID of the shadow of the claim of epoch inserted with
// nonce.
func ShadowID(key string, epoch uint64, nonce string) string {
	return ClaimID(key, epoch) + "#" + nonce
}

// Floor is a key's floor: every epoch below Epoch has ended. Nonce is
// that of the claim of Epoch, whose holder raised it: a floor counts only
// while the claim it names exists, so that a floor from before the store
// was emptied never vouches for the epochs of the store's new history.
type Floor struct {
	Epoch uint64
	Nonce string
}

// Session is one document of a session: a lease that every claim naming it
// shares. A session starts as one document (generation 0) and gains
// another generation each time a renewal's outcome is unknown (see
// Engine.RenewSession); its expiry is the highest of its documents'.
type Session struct {
	ID        string
	Gen       int       // the generation of the document (GetSession: of the one with the highest expiry)
	ExpiresAt time.Time // server time; only ever raised
}

// Store is what a backend provides to the protocol: exclusive inserts,
// point reads, two newest-first reads, and a session update that only
// raises an expiry. Every error other than ErrExists from an insert means
// the outcome is unknown: the write may be applied now, later, or never.
//
// An update need not be atomic: FerretDB 1.24 reads the document, then
// writes it whole in a separate transaction, so of two updates of one
// document applied at once, the one that read first can undo the other's
// change. The protocol therefore never lets two updates of one document be
// in flight at once: floors are inserted, and a session document is
// updated only by its owner, one renewal after the other, and never again
// after a renewal of unknown outcome.
type Store interface {
	// Insert creates d, or returns ErrExists if d.ID exists.
	Insert(ctx context.Context, d Doc) error
	// InsertOrdered creates docs one after the other, in one request, and
	// stops at the first whose ID exists: dup is its index, or -1 if all
	// were created. Those before it were created, none after it. On
	// MongoDB and FerretDB this is an ordered insert. Any error leaves
	// every outcome unknown.
	InsertOrdered(ctx context.Context, docs []Doc) (dup int, err error)
	// Get reads the document with the given ID; found is false if absent.
	Get(ctx context.Context, id string) (d Doc, found bool, err error)
	// Newest reads the claim of key with the highest epoch.
	Newest(ctx context.Context, key string) (d Doc, found bool, err error)
	// Floor reads the highest floor of key below below (any, if below is
	// 0); found is false if there is none.
	Floor(ctx context.Context, key string, below uint64) (f Floor, found bool, err error)
	// RaiseFloor records f as a floor of key, by an insert that succeeds
	// whether or not it was recorded before; sent is the latest possible
	// server time at sending.
	RaiseFloor(ctx context.Context, key string, f Floor, sent time.Time) error
	// Prune deletes key's claims, markers and floors with
	// 1 < epoch < below that were sent before sentBefore (Doc.Sent, and
	// for a floor the time RaiseFloor was given). The time bound keeps a
	// prune that lands late, after the store was emptied, from deleting
	// the documents of its new history.
	Prune(ctx context.Context, key string, below uint64, sentBefore time.Time) error

	// InsertSession creates generation s.Gen of session s.ID, or returns
	// ErrExists if it exists.
	InsertSession(ctx context.Context, s Session) error
	// RenewSession raises the expiry of generation gen of session id to
	// at least expires; found is false if that document does not exist.
	RenewSession(ctx context.Context, id string, gen int, expires time.Time) (found bool, err error)
	// GetSession reads every generation of a session and returns the one
	// with the highest expiry; found is false if there is none.
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
