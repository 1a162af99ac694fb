package dsyncmongo

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
)

// sessionsSuffix names the sessions collection after the lock collection:
// "dsync_locks_sessions" by default.
const sessionsSuffix = "_sessions"

// errNotPrepared refuses a renewal before Prepare has succeeded: it
// samples the server's clock on Prepare's estimator, which PrepareRead
// (reads only) does not start.
var errNotPrepared = errors.New("dsyncmongo: the store is not prepared for writes (Prepare has not succeeded)")

// sessionRetention is how long after its expiry a session document is
// kept. Deleting it changes nothing for its claims (a claim whose session
// is gone, or left without its generation 0 and expired, counts as dead a
// TTL after a walker first finds it so; it expired long before), but a read
// of a session's documents costs FerretDB time in proportion to the
// collection's size, and waiters' looks at a holder's session are such
// reads. The sweeps delete them (Compact).
const sessionRetention = time.Hour

// A sessionStore serves what the sessions collection holds: the sessions
// (here), the peers of direct hints (peers.go) and the revocations
// (revoke.go). Besides the collection, its state is
// whether this store made a session.
type sessionStore struct {
	coll   *mongo.Collection
	cfg    *config
	writer *writer
	clock  *serverClock
	// prepare prepares the store (Store.prepare), before the first write
	// of a peer or a revocation.
	prepare func(context.Context) (*clockcheck.Estimator, error)
	// made: this store inserted a session, whose process cleans the
	// long-expired sessions on Close (clean).
	made atomic.Bool
	// shared shares the reads that many callers send at once
	// (sessions_shared.go).
	shared sharedReads
}

// InsertSession is the Store's (driver.Store): one insert.
func (ss *sessionStore) InsertSession(ctx context.Context, sess driver.Session) error {
	return ss.insert(ctx, sess, 0)
}

// insert inserts sess's document with version v (upVersion: marked as a
// writer's that keeps the record of up-time, InsertSessionUp; 0: none).
func (ss *sessionStore) insert(ctx context.Context, sess driver.Session, v int) error {
	err := ss.writer.write(ctx, "session", func(ctx context.Context) error {
		_, err := ss.coll.InsertOne(ctx, sessionDoc{
			ID: sessionDocID(sess.ID, sess.Gen), ExpiresAt: sess.ExpiresAt, Host: ss.cfg.host, PID: ss.cfg.pid, Started: ss.clock.now(), V: v,
		})
		return err
	})
	if mongo.IsDuplicateKeyError(err) {
		return driver.ErrExists
	}
	if err == nil && sess.Gen == 0 {
		ss.made.Store(true)
	}
	return err
}

// closeCleanTime bounds the cleaning of sessions on Close, and the
// deleting of the events a stream found left over when it stops
// (trim.go).
const closeCleanTime = 2 * time.Second

// clean deletes the sessions that expired more than sessionRetention
// ago, and in the same delete any stall, wait, deadlock or outage record
// that an earlier release kept in this collection and is now older than
// its retention (oldRecords; records live in the records collection now,
// records.go), then the revocations that can no longer matter
// (cleanRevocations). Best effort. On FerretDB its deleteMany decodes
// the whole sessions collection, which holds a document for each process
// started within the retention, so it is sent when a process that made a
// session closes its store, and by sweeps (Compact), never on the way to
// a Lock. When each new session sent it, a fresh process's first
// Lock+Unlock cost grew with the processes started in the last hour.
//
// Without Prepare's estimator (a store used only for reads, whose
// PrepareRead started none; or a caller that broke driver.Store's rule
// and wrote before Prepare) it deletes nothing: which sessions expired
// long enough ago is judged only by the clock that orders the writes.
func (ss *sessionStore) clean(ctx context.Context) {
	e := ss.clock.forWrites()
	if e == nil {
		return
	}
	now := e.Now().Earliest
	before := now.Add(-sessionRetention)
	// One delete for both: FerretDB decodes the collection once.
	filter := bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lt", Value: before}}}},
		oldRecords(now),
	}}}
	if _, err := ss.writer.deleteWhere(ctx, ss.coll, "clean sessions", filter); err != nil {
		ss.cfg.logger.Debug("dsyncmongo: deleting expired sessions failed", "err", err)
	}
	ss.cleanRevocations(ctx, before)
}

// RenewSession is the Store's (driver.Store): one findAndModify by _id
// that raises the expiry with $max (a renewal applied late must not move
// it back) and samples the server's clock by setting "seen" with
// $currentDate; see Store.RenewSession.
func (ss *sessionStore) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	_, found, err := ss.renew(ctx, id, gen, expires, nil)
	return found, err
}

// renew sends one renewal of generation gen of session id: $max
// expiresAt, $currentDate seen, and set's fields (none: a renewal of the
// core contract; RenewSessionUp's record otherwise). It returns the
// document's "seen" as the server set it.
func (ss *sessionStore) renew(ctx context.Context, id string, gen int, expires time.Time, set bson.D) (time.Time, bool, error) {
	filter := bson.D{{Key: "_id", Value: sessionDocID(id, gen)}}
	update := bson.D{
		{Key: "$max", Value: bson.D{{Key: "expiresAt", Value: expires}}},
		{Key: "$currentDate", Value: bson.D{{Key: "seen", Value: true}}},
	}
	if set != nil {
		update = append(update, bson.E{Key: "$set", Value: set})
	}
	opts := options.FindOneAndUpdate().SetReturnDocument(options.After)
	est := ss.clock.forWrites()
	if est == nil {
		// Not prepared for writes (driver.Store: Prepare comes first; a
		// PrepareRead does not do): refused before anything is sent.
		return time.Time{}, false, errNotPrepared
	}
	var seen time.Time
	found := true
	err := ss.writer.write(ctx, "renew", func(ctx context.Context) error {
		return est.Sampled(ctx, func(ctx context.Context) (time.Time, error) {
			var d sessionDoc
			err := ss.coll.FindOneAndUpdate(ctx, filter, update, opts).Decode(&d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				found = false
				return time.Time{}, nil // not a sample, not an error
			}
			seen = d.Seen
			return d.Seen, err
		})
	})
	if err != nil || !found {
		return time.Time{}, false, err
	}
	return seen, true, nil
}

// GetSession is the Store's (driver.Store): one find of every document
// of the session (usually one), shared with the calls for the session
// that ask at the same time (sessions_shared.go).
func (ss *sessionStore) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	docs, err := ss.sessionDocs(ctx, id)
	if err != nil {
		return driver.Session{}, false, err
	}
	best := driver.Session{ID: id}
	found := false
	for _, d := range docs {
		gen, ok := sessionGenOf(id, d.ID)
		if !ok {
			continue // another session's, whose ID begins with id
		}
		if !found || d.ExpiresAt.After(best.ExpiresAt) {
			best.ExpiresAt, best.Gen = d.ExpiresAt, gen
		}
		best.HasFirst = best.HasFirst || gen == 0
		found = true
	}
	return best, found, nil
}
