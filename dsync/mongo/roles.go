package dsyncmongo

import (
	"context"
	"iter"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The parts of the driver contract that another type of this package
// serves, over the state it owns: the wake-up feed (feed.go), the
// sessions collection (sessions.go: sessions, peers, revocations), the
// directory of keys (directory.go) and what the store learned of its
// deployment (deployment.go). The Store passes each call on.

var (
	_ driver.Feed       = (*Store)(nil)
	_ driver.FeedPauser = (*Store)(nil)
)

// Follow implements driver.Feed: it starts the follower, one per store
// (its Client's).
func (s *Store) Follow(h driver.FeedHandler) (stop func()) { return s.feed.Follow(h) }

// Publish implements driver.Feed: one insert into the events collection.
func (s *Store) Publish(ctx context.Context, e driver.Event) error { return s.feed.Publish(ctx, e) }

// Replay implements driver.Feed: a stream that turns live replays the
// events kept, and on FerretDB events are trimmed trimSlack after a
// follower read them (trim.go). MongoDB keeps the newest eventsMaxDocs.
func (s *Store) Replay() time.Duration { return s.feed.Replay() }

// Pause implements driver.FeedPauser.
func (s *Store) Pause(paused bool) { s.feed.Pause(paused) }

var (
	_ driver.PeerStore        = (*Store)(nil)
	_ driver.RevokeStore      = (*Store)(nil)
	_ driver.LoopbackReporter = (*Store)(nil)
)

// InsertSession implements driver.Store: one insert.
func (s *Store) InsertSession(ctx context.Context, sess driver.Session) error {
	return s.sessions.InsertSession(ctx, sess)
}

// RenewSession implements driver.Store: one findAndModify by _id, raising
// the expiry with $max, never $set: a renewal applied late, after later
// ones, must not move the expiry back (on MongoDB; on FerretDB the engine
// sees to it that no two renewals of one document are ever in flight
// together). It is never sent again here: after an unknown outcome the
// engine moves to the session's next document.
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

// HintKey implements driver.PeerStore: a read of the key recorded (each
// process calls it every 30 s: one command while there is one); if none,
// an insert of key, and on a duplicate, a read of the key that won.
func (s *Store) HintKey(ctx context.Context, key []byte) ([]byte, error) {
	return s.sessions.HintKey(ctx, key)
}

// PutPeer implements driver.PeerStore: one upsert by _id.
func (s *Store) PutPeer(ctx context.Context, p driver.Peer) error { return s.sessions.PutPeer(ctx, p) }

// Peers implements driver.PeerStore: one find on the range of peers'
// _ids.
func (s *Store) Peers(ctx context.Context, after time.Time) ([]driver.Peer, error) {
	return s.sessions.Peers(ctx, after)
}

// Revoke implements driver.RevokeStore: one insert of the record, and
// no other write. It never writes a session's documents: on FerretDB an
// update is a read and a later whole-document write, so a revoke's write
// could land after a renewal its owner already counted and put back the
// older expiresAt (two holders). The owner reads the record (Revoked).
func (s *Store) Revoke(ctx context.Context, r driver.Revocation) error {
	return s.sessions.Revoke(ctx, r)
}

// Revoked implements driver.RevokeStore: one find by _id.
func (s *Store) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	return s.sessions.Revoked(ctx, session)
}

// Revocations implements driver.RevokeStore: one find on the range of
// revocations' _ids. It does not prepare the store: a read must not
// create the collections (dsync status of an empty database).
func (s *Store) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	return s.sessions.Revocations(ctx)
}

// PutKeys implements driver.Store: one unordered insert, whose
// duplicate-key answers mean those keys are recorded.
func (s *Store) PutKeys(ctx context.Context, keys []string) error { return s.dir.PutKeys(ctx, keys) }

// HasKey implements driver.Store: a find by _id, which FerretDB, unlike
// a range, answers without decoding the documents it passes.
func (s *Store) HasKey(ctx context.Context, key string) (bool, error) { return s.dir.HasKey(ctx, key) }

// KeyOrder implements driver.Store: OrderFirstUse on FerretDB,
// OrderBytes elsewhere.
func (s *Store) KeyOrder() driver.KeyOrder { return s.dir.KeyOrder() }

// ListKeys implements driver.Store: one find, and a getMore per batch of
// listBatch keys as the caller goes on.
func (s *Store) ListKeys(ctx context.Context, q driver.KeyQuery) iter.Seq2[string, error] {
	return s.dir.ListKeys(ctx, q)
}

// Loopback implements driver.LoopbackReporter: whether, as the store was
// prepared, every server of the deployment was reached over loopback
// and the deployment is neither a sharded cluster nor FerretDB on
// PostgreSQL. False before.
func (s *Store) Loopback() bool { return s.platform.loopback.Load() }
