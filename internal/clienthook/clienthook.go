// Package clienthook lets the tests of dsync's drivers, and of packages
// built on dsync, set what only tests may set on a dsync.Client: the
// protocol's timing constants, a planted bug, the relock window. The
// settings ride on the store given to dsync.NewClient (Store). It also
// gives package leader the option that puts its leases in their
// namespace (Elections). It is internal, so users cannot reach it, and
// it holds no state but Elections and StoreTime, which dsync sets once.
package clienthook

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/internal/queue"
)

// Settings are a Client's test-only settings; zero fields are left as
// they are.
type Settings struct {
	Chain *queue.Config
	Bug   queue.Bug
	// RelockWindow replaces the poll interval as the longest a Mutex that
	// locks again after a takeover waits for the owner it took over from.
	RelockWindow time.Duration
	// WrapStore wraps the Client's store: the Client calls the store
	// through what it returns, and its roles (driver.Roles: runs, the
	// sweeper's calls, the directory, reads, revocations) through what
	// that returns from Roles; it takes the feed, the key checks and the
	// hints' records from the store itself. A wrapper that embeds
	// driver.Store passes every role on; one that must see a role's calls
	// overrides Roles.
	WrapStore func(driver.Store) driver.Store
	// Hints, if set, is given the Client's hint transport, for its Stats,
	// when it is made: with the Client for dsync.ClientWithHints; by
	// default, on loopback, as the Client first follows its feed.
	Hints func(*hint.Feed)
	// Raw, if set, is given the Client's protocol calls when it is made.
	Raw func(Raw)
	// JudgedOver, if set, runs each time a session of the Client is
	// judged over by its deadline timer or by a renewal reply that came
	// too late, in the goroutine that judged it, once its holds' Lost
	// channels are closed and before their loss is reported: a test may
	// stop that goroutine there.
	JudgedOver func()
}

// Store is a store that carries Settings to the dsync.Client made over
// it: dsync.NewClient applies them and uses Store beneath (whose feed,
// if it has one, the Client follows).
type Store struct {
	driver.Store
	Settings Settings
}

// Raw is a Client's protocol calls beneath its primitives, one call each,
// for tests of drivers and of the protocol through them.
type Raw interface {
	OpenSession(ctx context.Context, ttl time.Duration) (string, error)
	// RenewSession wraps dsync.ErrSessionGone when the session is gone.
	RenewSession(ctx context.Context, session string, ttl time.Duration) error
	// Claim returns a *dsync.HeldError when try is set and the key is
	// held.
	Claim(ctx context.Context, key, owner, session string, try bool) (queue.Ref, error)
	Await(ctx context.Context, c queue.Ref) error
	End(ctx context.Context, c queue.Ref, held bool) error
	// Look reads key's queue as a claimer's walk does, learning the gate
	// that covers the key now (and ending claims it finds dead), which a
	// Client's Queue, a read that writes nothing, does not.
	Look(ctx context.Context, key string) error
}
