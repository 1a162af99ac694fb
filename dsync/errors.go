package dsync

import "errors"

// Sentinel errors. Match them with errors.Is.
var (
	// ErrHeld reports that another owner holds the lock. Backend.Acquire
	// returns it as a *HeldError that carries the holder and a wait hint.
	ErrHeld = errors.New("dsync: lock held")

	// ErrLost is returned by UnlockContext when the hold had already ended
	// without an Unlock: its lease expired, a renewal was refused, or the
	// outcome of renewals stayed unknown past the local deadline. Work done
	// after Lost() closed was not protected by the lock.
	ErrLost = errors.New("dsync: lock lost before unlock")

	// ErrLateReply is reported (through the error handler) when an acquire
	// succeeded on the backend but the reply arrived after the hold's local
	// deadline, so it could not be counted; the epoch is released again.
	ErrLateReply = errors.New("dsync: backend reply arrived after the lease deadline")
)
