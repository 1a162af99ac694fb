package dsync

import (
	"context"
	"fmt"
	"time"
)

// Backend is the store a Mutex coordinates through. It is defined here, by
// its consumer, and kept small; dsync/mongo and the in-memory backend of
// this package implement both, with the protocol of package
// internal/chain.
//
// A process holds one session per backend, TTL and renew interval: a
// lease that every claim it makes shares, renewed by one call per
// interval however many locks it holds or waits for. A key is a FIFO queue
// of claims, one per epoch; a claim holds once every lower epoch has
// ended (released, withdrawn, or its session expired), so holds go in
// epoch order and the epoch is a fencing token that strictly increases
// from hold to hold. Implementations must be safe for concurrent use.
//
// Every error other than a *HeldError means the outcome is unknown: the
// write may or may not have been applied, now or at any later time.
// Callers never count such a call as a success, and implementations make
// every write harmless whenever it is applied: a session's stored expiry
// only grows, a claim whose insert had an unknown outcome is withdrawn,
// and no late write lets a second owner hold a key.
type Backend interface {
	// OpenSession creates a session valid for ttl from when the request
	// was sent. On error the session must not be used.
	OpenSession(ctx context.Context, ttl time.Duration) (session string, err error)

	// RenewSession extends the session to ttl from when the request was
	// sent. An error wrapping ErrSessionGone means it was certainly not
	// extended and the session no longer exists; any other error means
	// nothing is known.
	RenewSession(ctx context.Context, session string, ttl time.Duration) error

	// Claim queues owner for key in session and returns the claim, whose
	// Token is its epoch.
	//
	// With try set, Claim inserts only when nothing holds or waits for key,
	// returns the claim only if it holds at once, and otherwise returns a
	// *HeldError, having withdrawn anything it inserted: TryLock's one
	// attempt, which never waits.
	Claim(ctx context.Context, key, owner, session string, try bool) (Claim, error)

	// Await blocks until c holds (every lower epoch of its key has ended)
	// and returns nil, or returns ctx's cause when ctx ends first, or a
	// backend error. It may be called again after an error.
	Await(ctx context.Context, c Claim) error

	// End ends c: a release if it held, a withdrawal if not, so that the
	// next claim of its key holds at once. Ending a claim twice, or one
	// whose session expired, changes nothing for anyone else. A nil error
	// means the end is durable; after an error the backend keeps trying.
	End(ctx context.Context, c Claim, held bool) error
}

// Claim is one place in a key's queue: one epoch, claimed by Owner in
// Session. Once it holds, Token is the hold's fencing token: it strictly
// increases with each hold of Key and is never reused.
type Claim struct {
	Key     string
	Owner   string
	Session string
	Token   uint64
	// Nonce is unique to the insert that made the claim; the backend ends
	// only the claim with this nonce.
	Nonce string
}

// HeldError is returned by Backend.Claim with try set, when another
// claim holds or waits for the key. errors.Is(err, ErrHeld) reports true
// for it.
type HeldError struct {
	Key   string
	Owner string // the current holder or first waiter, if the backend knows it
	Token uint64 // its token, if the backend knows it
}

func (e *HeldError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("dsync: lock %q held by another owner", e.Key)
	}
	return fmt.Sprintf("dsync: lock %q held by %s (token %d)", e.Key, e.Owner, e.Token)
}

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }
