package dsync

import (
	"context"
	"fmt"
	"time"
)

// Backend is the store a Mutex coordinates through. It is defined here, by
// its consumer, and kept small; dsync/mongo and the in-memory backend of
// this package implement it.
//
// A backend keeps, per key, a chain of epochs. Ownership moves only by
// creating the next epoch, so the epoch number is a fencing token that
// strictly increases per key. Only the owner of an epoch changes it (renew,
// release). Implementations must be safe for concurrent use.
//
// Every error other than a *HeldError means the outcome is unknown: the
// write may or may not have been applied, now or at any later time. Callers
// never count such a call as a success.
//
// A request may be applied long after it was sent, and after later
// requests of the same caller. Implementations must make every write
// harmless whenever it is applied: a lease's stored expiry only grows,
// and no late write may let a second owner hold a key.
type Backend interface {
	// Acquire makes one attempt to create the next epoch of key for owner,
	// valid for ttl from when the request was sent.
	//
	// It succeeds only when key has no epoch yet, or its newest epoch was
	// released or has provably expired. An unreleased epoch that owner
	// itself holds (left by an earlier attempt whose outcome was unknown)
	// is released first, so every successful Acquire returns a new token.
	//
	// When another owner holds key, Acquire returns a *HeldError saying
	// how long to wait before trying again; that is contention, not
	// failure.
	Acquire(ctx context.Context, key, owner string, ttl time.Duration) (Lease, error)

	// Renew extends each lease to ttl from when the request was sent, in
	// as few round trips as the store allows (one for any number of
	// leases on dsync/mongo). applied[i] reports whether leases[i] was
	// extended; false means it was certainly not, and the lease is no
	// longer the caller's. A non-nil error means nothing is known.
	Renew(ctx context.Context, ttl time.Duration, leases []Lease) (applied []bool, err error)

	// Release marks the lease's epoch released so the key can be taken
	// at once. Releasing an epoch that is no longer the newest changes
	// nothing for the newer holder. A nil error means the release is
	// durable.
	Release(ctx context.Context, lease Lease) error
}

// Waiter is implemented by backends that can tell a waiter when a held key
// may have become free sooner than by polling, for example because the
// holder announced its release. A Mutex waiting on a *HeldError calls
// WaitFree instead of sleeping for its RetryAfter.
type Waiter interface {
	// WaitFree blocks until held.Key may be free: the holder's release was
	// announced, or held.RetryAfter has passed. Announcements are hints,
	// never proof of anything: the caller's next Acquire decides. It
	// returns nil to try again, or context.Cause(ctx) once ctx ends.
	WaitFree(ctx context.Context, held *HeldError) error
}

// Lease is one epoch of a key: a hold granted to Owner, fenced by Token.
type Lease struct {
	Key   string
	Owner string
	// Token is the epoch number: it strictly increases with each hold of
	// Key and is never reused.
	Token uint64
}

// HeldError is returned by Backend.Acquire, and by TryLock's underlying
// attempt, when another owner holds the key. errors.Is(err, ErrHeld)
// reports true for it.
type HeldError struct {
	Key   string
	Owner string // the current holder, if the backend knows it
	Token uint64 // the current holder's token, if the backend knows it
	// RetryAfter is how long the caller should wait before the next
	// attempt: until the current epoch can have expired, capped by the
	// backend's poll interval. Zero means "try again soon".
	RetryAfter time.Duration
}

func (e *HeldError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("dsync: lock %q held by another owner", e.Key)
	}
	return fmt.Sprintf("dsync: lock %q held by %s (token %d)", e.Key, e.Owner, e.Token)
}

// Is makes errors.Is(err, ErrHeld) true for a *HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }
