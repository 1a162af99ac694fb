package dsync

import "errors"

// Sentinel errors. Match them with errors.Is.
var (
	// ErrHeld reports that another owner holds the lock, or waits for it
	// ahead of the caller. Backend.Claim returns it, for TryLock's attempt,
	// as a *HeldError that carries the holder.
	ErrHeld = errors.New("dsync: lock held")

	// ErrLost is returned by UnlockContext when the hold had already ended
	// without an Unlock: its lease expired, a renewal was refused, or the
	// outcome of renewals stayed unknown past the local deadline. Work done
	// after Lost() closed was not protected by the lock.
	ErrLost = errors.New("dsync: lock lost before unlock")
)
