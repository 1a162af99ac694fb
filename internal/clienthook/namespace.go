package clienthook

import (
	"log/slog"
	"time"
)

// Elections is the dsync.Option that puts a Mutex in package
// leader's namespace ("election"), where its leases live and which
// dsync.WithNamespace refuses to users (a user's Mutex there would share
// keys with the leases). Package dsync sets it as it is initialized, so
// before any package that imports dsync runs; package leader asserts it
// to dsync.Option. It is an any because this package cannot import
// dsync, and internal, so that only dsync's own packages can reach it.
var Elections any

// StoreTime is a func(*dsync.Client) time.Time that returns the earliest
// the store's time can be now, as the Client knows it (the store's
// ServerTime): package leader times a preemption's delay from a claim's
// QueuedAt by it. Package dsync sets it as it is initialized, as it does
// Elections.
var StoreTime any

// NamespacedKey is key in namespace ns (dsync.WithNamespace), as it is
// stored: "dsync:NS/KEY". dsync stores its namespaced keys by it, package
// leader names its leases by it (operator.LockKey) and package statuspage
// exports it, so that the three spell a stored key alike.
func NamespacedKey(ns, key string) string { return "dsync:" + ns + "/" + key }

// KeyLogger is a func(*slog.Logger) dsync.Option that gives one primitive
// a logger of its own, over its Client's: package leader logs an
// election's lease to the election's logger (leader.WithLogger). Users set
// the logger on the Client. Package dsync sets it as it is initialized, as
// it does Elections.
var KeyLogger any

// Params are a Client's lease and logger, as ClientParams returns them.
type Params struct {
	TTL           time.Duration // the lease's length (dsync.ClientWithTTL)
	RenewInterval time.Duration // how often the lease is renewed
	Logger        *slog.Logger  // the Client's (dsync.ClientWithLogger)
	// ReleaseTimeout bounds a release (dsync.ClientWithReleaseTimeout, or
	// its default).
	ReleaseTimeout time.Duration
	// OutageGrace is the longest outage of the store credited to a hold
	// (dsync.ClientWithOutageGrace); 0: none.
	OutageGrace time.Duration
}

// ClientParams returns a *dsync.Client's Params: package leader sizes its
// leases' calls and heartbeats by them, and logs where the Client does
// unless told otherwise. Package dsync sets it as it is initialized.
var ClientParams func(client any) Params

// OwnerOf returns the owner identity a *dsync.Mutex, *dsync.RWMutex or
// *dsync.Semaphore claims under: unique per value, the Owner of its claims
// in the store. Package leader names a candidate by its lease's; tests
// match the claims they read to the values that made them. Package dsync
// sets it as it is initialized.
var OwnerOf func(primitive any) string
