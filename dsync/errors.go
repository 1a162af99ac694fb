package dsync

import "errors"

// Sentinel errors. Match them with errors.Is.
var (
	// ErrHeld reports that another owner holds the lock, or waits for it
	// ahead of the caller. The Try methods' Context forms return it as a
	// *HeldError that carries the holder.
	ErrHeld = errors.New("dsync: lock held")

	// ErrLost is returned by UnlockContext when the hold had already ended
	// without an Unlock: its lease expired, a renewal was refused, or the
	// outcome of renewals stayed unknown past the local deadline. Work done
	// after Lost() closed was not protected by the lock.
	ErrLost = errors.New("dsync: lock lost before unlock")

	// ErrReset is what a Backend's Claim or Await returns (wrapped) when
	// the store no longer holds what the backend knew of the key: its
	// collections were emptied, dropped or restored from a backup while
	// this process ran. The claim is void (the backend gave it up); a
	// Mutex checks its session and queues again, so Lock and LockContext
	// never return it.
	ErrReset = errors.New("dsync: the store lost the lock's history (emptied or restored)")

	// ErrSpan reports that the store records a bucket span other than
	// this process's (ClientWithBucketSpan, dsyncmongo.WithBucketSpan): a
	// configuration error, which retrying does not mend. Every method
	// that acquires returns it at once (Lock and RLock, which have no
	// error to return, panic with it); the error's text says which span
	// the store uses and what to change.
	ErrSpan = errors.New("dsync: the store's bucket span is not this process's")
)
