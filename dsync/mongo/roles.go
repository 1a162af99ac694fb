package dsyncmongo

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Roles implements driver.Store: it returns every role of the contract.
// Each role is served by the part of the store that owns its state: the
// wake-up feed (feed.go), the sessions collection (sessions.go: peers,
// revocations), the records collection (records.go: stall records, lock
// sets' wait notes, deadlock records, outage records), the directory of keys (directory.go), what
// the store learned of its deployment (deployment.go: loopback), the
// store itself for runs, the sweeper and reads (storeRoles), and for the
// record of up-time, which its session documents keep
// (sessions_uptime.go).
func (s *Store) Roles() driver.Roles {
	r := storeRoles{s}
	return driver.Roles{
		Runs: r, Maintenance: r, Reads: r, KeyCheck: keyLimits{},
		Directory: s.dir, Feed: s.feed, FeedPause: s.feed,
		Peers: s.sessions, Revocations: s.sessions, Stalls: s.records, Loopback: loopbackRole{s},
		Uptime: s, Waits: s.records, Deadlocks: s.records, Outages: s.records,
	}
}

// storeRoles serves the roles that read or delete over the lock
// collection (run.go, compact.go) and the reads' preparation
// (prepare_read.go).
type storeRoles struct{ *Store }

// keyLimits is the store's driver.KeyChecker.
type keyLimits struct{}

// CheckKey implements driver.KeyChecker.
func (keyLimits) CheckKey(key string) error { return checkKey(key) }

var (
	_ driver.RunReader        = storeRoles{}
	_ driver.Maintainer       = storeRoles{}
	_ driver.ReadPreparer     = storeRoles{}
	_ driver.KeyDirectory     = (*directory)(nil)
	_ driver.Feed             = (*feed)(nil)
	_ driver.FeedPauser       = (*feed)(nil)
	_ driver.PeerStore        = (*sessionStore)(nil)
	_ driver.RevokeStore      = (*sessionStore)(nil)
	_ driver.StallStore       = (*recordStore)(nil)
	_ driver.WaitStore        = (*recordStore)(nil)
	_ driver.DeadlockStore    = (*recordStore)(nil)
	_ driver.OutageStore      = (*recordStore)(nil)
	_ driver.LoopbackReporter = loopbackRole{}
	_ driver.UptimeStore      = (*Store)(nil)
)

// The sessions of the core contract, which the sessions collection's
// part serves.

// InsertSession implements driver.Store: one insert.
func (s *Store) InsertSession(ctx context.Context, sess driver.Session) error {
	return s.sessions.InsertSession(ctx, sess)
}

// RenewSession implements driver.Store with one findAndModify by _id. It
// raises the expiry with $max, never $set: a renewal applied late, after
// later ones, must not move the expiry back. That holds on MongoDB; on
// FerretDB the engine sees to it that no two renewals of one document are
// ever in flight together. It is never sent again here: after an unknown
// outcome the engine moves to the session's next document.
//
// The renewal also samples the server's clock: it sets "seen" with
// $currentDate and reads the document back, so on a single server the
// estimator needs no sampling commands of its own while renewals flow
// (clockcheck.Estimator.Sampled).
func (s *Store) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	return s.sessions.RenewSession(ctx, id, gen, expires)
}

// GetSession implements driver.Store: one find of every document of the
// session (usually one).
func (s *Store) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	return s.sessions.GetSession(ctx, id)
}
