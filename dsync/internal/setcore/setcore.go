// Package setcore lets package dsync/lockset take a primitive's hold as
// one member of a lock set, and read a Client's queues for deadlock
// detection, through calls package dsync sets as it is initialized
// (dsync/setmember.go, dsync/setreads.go), so that package dsync exports
// nothing for lock sets. It lives under dsync/internal, so that only
// dsync's own packages reach it, and it imports nothing of package
// dsync's (only its driver types): dsync imports it to set its calls. A primitive is an any, which dsync asserts to the type
// its call names; it holds no state but those calls.
package setcore

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/event"
)

// A Member is one primitive's side of a lock set: a Mutex, or the read or
// the write side of an RWMutex. Its local turn is the primitive's own lock
// within the process (a Mutex's, an RWMutex's writers'; a read has none):
// Lock takes it before it claims, and a member takes it before it
// acquires.
type Member interface {
	// Client is the primitive's *dsync.Client.
	Client() any
	// Key is the primitive's key as given; Stored is the key as stored
	// (in its namespace), which orders the members of every set.
	Key() string
	Stored() string
	// TTL is the primitive's lease (dsync.WithTTL).
	TTL() time.Duration
	// TryTurn takes the local turn if it is free, else returns the
	// *dsync.HeldError a Try meets there. Turn waits for it until ctx
	// ends (then context.Cause(ctx)). Unturn gives back a turn taken
	// with no hold acquired under it.
	TryTurn() error
	Turn(ctx context.Context) error
	Unturn()
	// Acquire takes a hold of the member's key under its turn, installed
	// in the primitive as its own Lock installs one: with wait, as its
	// LockContext (RLockContext) waits; without, as its TryLockContext
	// (TryRLockContext) tries. Every claim it makes names the set's
	// identity waiter (the claim document's Waiter), which deadlock
	// detection follows from a blocked claim to the set holding its key;
	// it changes nothing else of how the claim holds or waits. Its
	// progress deadline, if any, is not watched until Start.
	Acquire(ctx context.Context, wait bool, waiter string) (Hold, error)
}

// A Hold is a member's hold.
type Hold interface {
	Token() uint64
	// Claim names the hold's claim (its key as stored, epoch and nonce).
	Claim() driver.ClaimRef
	// Lost is closed once the hold was lost (a deadline passed unseen is
	// looked at first); Err is why, nil before.
	Lost() <-chan struct{}
	Err() error
	ValidUntil() time.Time
	// OnLost has f called when the hold is lost from now on, in the
	// goroutine that found it lost, after Lost closed. One f at a time.
	OnLost(f func())
	// Start watches the hold's progress deadline from now.
	Start()
	// Release ends the hold, as its primitive's UnlockContext
	// (RUnlockContext) ends it, and gives back its turn. Unlock does so
	// within the primitive's release timeout and reports what fails, as
	// its Unlock does. Both return ErrUninstalled, doing nothing, if the
	// primitive no longer counts the hold (it was unlocked directly).
	Release(ctx context.Context) error
	Unlock() error
}

// ErrUninstalled: a member's hold was ended through its primitive, not
// through its set.
var ErrUninstalled = errors.New("dsync: a lock set's member was unlocked outside its set")

// Mutex, Read and Write return the member that a *dsync.Mutex, and the
// read or the write side of a *dsync.RWMutex, is in a set. They panic, as
// the primitive's methods do, for a zero or nil primitive. Package dsync
// sets them as it is initialized.
var Mutex, Read, Write func(primitive any) Member

// A Reader is what a *dsync.Client reads for the deadlock detection of
// lock sets. It only reads.
type Reader interface {
	// Queue returns key's (as stored) claims that have not ended, lowest
	// epoch first, judged as dsync status judges them (Holds by the
	// grant rule among those not Expired).
	Queue(ctx context.Context, key string) ([]Claim, error)
	// LatestWait is the store's driver.WaitStore.LatestWait, or an error
	// wrapping errors.ErrUnsupported if the store keeps no notes.
	LatestWait(ctx context.Context, set string) (driver.Wait, bool, error)
}

// A Claim is one claim of a Reader's Queue.
type Claim struct {
	driver.ClaimRef
	Waiter         string // the lock set it is a member of (driver.Doc.Waiter)
	Session        string // the session it was made in
	Shared         bool   // it shares its key with other shared claims
	Holds, Expired bool
}

// Reads returns a *dsync.Client's Reader. Package dsync sets it as it is
// initialized.
var Reads func(client any) Reader

// Records is what a lock set writes for deadlock detection through a
// *dsync.Client: its notes and the records of deadlocks it broke, each
// stamped with the store's time (At), the host and the process ID, and
// put as the store's roles put them (driver.ErrExists for an ID already
// there). Both return an error wrapping errors.ErrUnsupported if the
// store keeps no such records.
type Records interface {
	PutWait(ctx context.Context, w driver.Wait) error
	PutDeadlock(ctx context.Context, d driver.Deadlock) error
	// Now is the store's time now, as records stamp it
	// (ServerTime().Latest).
	Now() time.Time
	// Broken tells the Client's observer of a deadlock broken
	// (event.Observer.DeadlockBroken).
	Broken(e event.Deadlock)
}

// Record returns a *dsync.Client's Records. Package dsync sets it as it
// is initialized.
var Record func(client any) Records
