package dsync

import (
	"errors"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrHeld reports that another owner holds the lock, or waits for it
	// ahead of the caller. The Try methods' Context forms return it as a
	// *HeldError that carries the holder.
	ErrHeld = errors.New("dsync: lock held")

	// ErrLost is returned by UnlockContext when the hold had already ended
	// without an Unlock. Its lease expired, a renewal was refused, the
	// outcome of renewals stayed unknown past the local deadline, or its
	// session was revoked (ErrRevoked). Work done after Lost() closed was
	// not protected by the lock.
	ErrLost = errors.New("dsync: lock lost before unlock")

	// ErrRevoked is what a hold's loss wraps, beside ErrLost, when its
	// session was revoked. An operator revoked the session (dsync revoke):
	// the process read the revocation and stopped renewing. Its waiting
	// claims are withdrawn; the next Lock opens a new session.
	ErrRevoked = errors.New("dsync: session revoked by an operator")

	// ErrSuspended is what a hold's loss wraps, beside ErrLost, when its
	// session was suspended at its deadline in an outage of the store
	// (ClientWithOutageGrace): a Mutex locked again (LockContext) holds
	// again, with the same token, if the outage did not end the hold.
	ErrSuspended = errors.New("dsync: hold suspended: its lease could not be renewed in an outage of the store")

	// ErrStalled is what a hold's loss wraps, beside ErrLost, when its work
	// stalled. It applies when the hold's primitive has a progress deadline
	// (WithProgressDeadline) and no progress was reported within it. The
	// work was alive but stuck, and its claim was released so that the next
	// waiter goes on.
	ErrStalled = errors.New("dsync: no progress reported within the progress deadline")

	// ErrReset is what the Client's claims return (wrapped) when the store
	// lost their history. The store no longer holds what the Client knew of
	// the key: its collections were emptied, dropped or restored from a
	// backup while this process ran. The claim is void (the Client gave it
	// up); a Mutex checks its session and queues again, so Lock and
	// LockContext never return it.
	ErrReset = errors.New("dsync: the store lost the lock's history (emptied or restored)")

	// ErrSpan reports that the store records a bucket span other than this
	// process's. See ClientWithBucketSpan. It is a configuration error,
	// which retrying does not mend. Every method that acquires returns it
	// at once (Lock and RLock, which have no error to return, panic with
	// it); the error's text says which span the store uses and what to
	// change.
	ErrSpan = errors.New("dsync: the store's bucket span is not this process's")

	// ErrClosed is returned by calls on a closed Client, and by a
	// Client's calls on a store that was closed. It is one value with
	// leader.ErrClosed and dsyncmongo.ErrClosed (its text: "dsync:
	// closed"), so one errors.Is check matches whichever was closed.
	ErrClosed = driver.ErrClosed

	// ErrNilClient is returned by the constructors of the primitives
	// given no Client.
	ErrNilClient = errors.New("dsync: nil client")

	// ErrEmptyKey is returned by the constructors of the primitives, and
	// by the Client's reads, given an empty key.
	ErrEmptyKey = errors.New("dsync: empty key")

	// ErrSessionGone is what a renewal returns (wrapped) when the session
	// no longer exists: it certainly was not extended.
	ErrSessionGone = errors.New("dsync: session gone")

	// ErrOverLimit is what Semaphore.Acquire returns for a request of
	// more units than the semaphore's limit: it could never be granted.
	ErrOverLimit = errors.New("dsync: more units than the semaphore's limit")

	// Errors of a run that Once.Do cannot report as the one run of f;
	// each is returned wrapped, with the key and the tokens.

	// ErrUnconfirmed: f returned nil, but its done record was not
	// confirmed while f's hold was valid. Either no reply to the insert
	// came before the hold was lost (or ctx ended), and the record may
	// not be in the store; or the record landed but its reply came only
	// after the hold had ended, when another holder may already have
	// read no record and run f too. f ran here, and may run, or have
	// run, elsewhere.
	ErrUnconfirmed = errors.New("dsync: once: the function succeeded, but its record was not confirmed under a valid hold")
	// ErrRanTwice: f returned nil, and succeeded in two holds. Its done
	// record met the record of another hold's run of f, which landed after
	// this hold's read found none (its insert was held up on the way while
	// that hold ended). The other Do, if it returned, returned
	// ErrUnconfirmed.
	ErrRanTwice = errors.New("dsync: once: the function succeeded in two holds")
)
