// Package clienthook is the one test-hook package of the library's
// packages: it lets the tests of dsync's drivers, and of packages built
// on dsync, set what only tests may set on a dsync.Client (Settings), on
// a leader.Partition (PartitionSettings) and on a dsyncmongo.Store
// (MongoReadRuns). On a Client: the relock window, a wrapper of its
// store, its hint transport, a stop where a session is judged over. The
// settings ride on the store given to dsync.NewClient (Wrap). They are
// dsync-level settings with no type of the protocol engine's, so that
// packages outside dsync (leader, the integration suite) may use them;
// the engine's test settings (its timing constants, a planted bug, its
// protocol calls one by one) are dsync/internal/enginehook's, which only
// dsync's own packages reach. It also gives package leader the option
// that puts its leases in their namespace (Elections). It is internal,
// so users cannot reach it, and it holds no state but the hooks dsync
// and dsyncmongo set once as they are initialized.
//
// It imports nothing of dsync's: it sits on the ground floor of the
// repository, beneath the packages that use it. A setting or read of a
// dsync or driver type is an any (or a type parameter) that dsync asserts
// to the type its doc names, panicking at a mismatch, which only a test
// can make.
package clienthook

import "time"

// Settings are a Client's test-only settings; zero fields are left as
// they are.
type Settings struct {
	// RelockWindow replaces the poll interval as the longest a Mutex that
	// locks again after a takeover waits for the owner it took over from.
	RelockWindow time.Duration
	// WrapStore wraps the Client's store: the Client calls the store
	// through what it returns, and its roles (driver.Roles: runs, the
	// sweeper's calls, the directory, reads, revocations) through what
	// that returns from Roles; it takes the feed, the key checks and the
	// hints' records from the store itself. A wrapper that embeds
	// driver.Store passes every role on; one that must see a role's calls
	// overrides Roles. It is a func(driver.Store) driver.Store.
	WrapStore any
	// Hints, if set, is given the Client's hint transport, for its Stats,
	// when it is made: with the Client for dsync.ClientWithHints; by
	// default, on loopback, as the Client settles its feed. It is a
	// func(*hint.Feed).
	Hints any
	// Settled, if set, runs once the Client has settled how it follows
	// its feed: in NewClient, unless it asks the store whether to take
	// direct hints by default; else once it has asked, in the background
	// (once it follows its hint transport, if it takes hints), in the
	// goroutine that asked.
	Settled func()
	// JudgedOver, if set, runs each time a session of the Client is
	// judged over by its deadline timer or by a renewal reply that came
	// too late, in the goroutine that judged it, once its holds' Lost
	// channels are closed and before their loss is reported: a test may
	// stop that goroutine there.
	JudgedOver func()
	// Clock, if set, is the Client's time source: of its lease and of its
	// primitives' waits. Now must carry a monotonic reading, as time.Now
	// does (the wall-clock part is never used); AfterFunc calls f in its
	// own goroutine after d, and the stop it returns prevents the call if
	// it has not started, reporting whether it did so. Tests rarely need
	// one: testing/synctest fakes the time package that the default uses.
	Clock Clock
}

// Clock is a Client's time source (Settings.Clock).
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Wrap returns store, a driver.Store, wrapped in a store that carries s
// to the dsync.Client made over it: dsync.NewClient applies s and uses
// store beneath (whose feed, if it has one, the Client follows), which
// may be a dsync/internal/enginehook.Store carrying engine settings. S is
// the type the caller holds the store as, driver.Store: the wrapper is
// of a type of dsync's, so Wrap panics for any other S.
func Wrap[S any](store S, s Settings) S {
	w, ok := Carry(store, s).(S)
	if !ok {
		panic("clienthook: Wrap needs the store as a driver.Store")
	}
	return w
}

// Carry wraps store, a driver.Store, as Wrap does. Package dsync sets it
// as it is initialized.
var Carry func(store any, s Settings) any
