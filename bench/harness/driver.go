package harness

import (
	"context"
	"time"
)

// A Driver is a lock library under test, with the server it talks to.
type Driver interface {
	// Name is the library's short name in the results ("dsync", "etcd").
	Name() string
	// Describe returns the library's module and version, and the
	// server's name and version, for the results.
	Describe(ctx context.Context) (library, server string)
	// Connect opens a client whose traffic m counts. ns names a fresh
	// namespace (collection, key prefix) for one scenario run; every
	// process of the run passes the same ns.
	Connect(ctx context.Context, m *Meter, ns string) (Conn, error)
}

// A Conn is one process's client of the library.
type Conn interface {
	// NewMutex returns a lock on key with lease ttl (0: DefaultTTL).
	// The Locker keeps its lease alive while held, with the library's own
	// mechanism where it has one, or with the loop a user would write
	// (renew every ttl/3) where it has not.
	NewMutex(key string, ttl time.Duration) (Locker, error)
	Close() error
}

// A Locker is a lock, or an election candidate (Lock = campaign until
// elected, Unlock = resign).
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// TryLocker is a Locker that can make a single attempt.
type TryLocker interface {
	TryLock(ctx context.Context) (bool, error)
}

// LostReporter is a Locker that knows whether its hold ended without
// Unlock (its lease could not be renewed in time).
type LostReporter interface {
	Lost() bool
}

// Elections is a Conn of a library with leader election.
type Elections interface {
	NewElection(name string, ttl time.Duration) (Locker, error)
}

// ManyHolder is a Conn that holds many locks better than one Locker each
// (a shared lock id renewed in one call, say). lost counts the holds that
// ended without release.
type ManyHolder interface {
	HoldMany(ctx context.Context, keys []string, ttl time.Duration) (release func(context.Context) error, lost func() int, err error)
}

// Renewer names the commands a Conn's renewals send, so the renewal
// scenario can report their latency.
type Renewer interface {
	RenewCommands() []string
}

// Dropper is a Conn that can remove a namespace's data after a run.
type Dropper interface {
	Drop(ctx context.Context) error
}

// LatencyProber is a Driver that measures the floor its handoff is judged
// against: the round trip of one command, and the delivery of one wake-up
// event from the start of its send to its arrival at another client
// (nil if the library has no events). n samples of each.
type LatencyProber interface {
	ProbeLatency(ctx context.Context, ns string, n int) (roundTrip, event []float64, err error)
}

// DefaultTTL is the lease used where a scenario does not set one: dsync's
// default, given to every library so that none renews more often.
const DefaultTTL = 15 * time.Second
