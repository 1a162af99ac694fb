package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/errtext"
)

// Store is the MongoDB driver: a driver.Store over a database's
// collections. It keeps a lock, a sessions and a records collection, and its Roles
// serve every part of the contract, among them a driver.Feed over its
// events collection and a directory of keys over its keys collection. It
// decides nothing; a dsync.Client made over it (dsync.NewClient) runs the
// protocol above it. Make it with NewStore. Every read and update of one
// document filters on _id alone: FerretDB answers any other query by
// decoding the whole collection.
type Store struct {
	db   *mongo.Database
	coll *mongo.Collection // claims, shadows, end markers, gates
	cfg  *config

	// sem is the preparation lock: it serializes preparation (the
	// platform's probe, check and reach, the estimators' start) and the
	// end of Close, while letting a waiting caller give up when its ctx
	// ends. No other lock of the store is taken while it is held.
	sem    chan struct{}
	closed atomic.Bool // set under sem

	// The store's parts, each over the state it owns; newStore makes
	// them, and the Store passes on the calls they serve (roles.go).
	platform *platform     // what it learned of the deployment (deployment.go)
	clock    *serverClock  // the server-time estimators (servertime.go)
	writer   *writer       // how writes are sent; whether the server answers (writes.go)
	sessions *sessionStore // the sessions collection: sessions, peers, revocations (sessions.go)
	records  *recordStore  // the records collection: stalls, waits, deadlocks, outages (records.go)
	dir      *directory    // the directory of keys (directory.go)
	feed     *feed         // the wake-up feed (feed.go)
}

var _ driver.Store = (*Store)(nil)

func newStore(db *mongo.Database, cfg *config) *Store {
	// The clock that matters is the primary's, which orders the writes.
	primary := db.Client().Database(db.Name(), options.Database().SetReadPreference(readpref.Primary()))
	s := &Store{db: primary, cfg: cfg, sem: make(chan struct{}, 1)}
	s.coll = s.collection(cfg.collection)
	s.platform = &platform{db: primary, coll: s.coll, cfg: cfg}
	sessions := s.collection(cfg.collection + sessionsSuffix)
	s.clock = newServerClock(primary, sessions, cfg)
	s.writer = &writer{cfg: cfg, platform: s.platform, clock: s.clock}
	s.sessions = &sessionStore{coll: sessions, cfg: cfg, writer: s.writer, clock: s.clock, prepare: s.prepare}
	s.records = &recordStore{coll: s.collection(cfg.collection + recordsSuffix), cfg: cfg, writer: s.writer, clock: s.clock, prepare: s.prepare}
	s.feed = &feed{
		db: primary, events: primary.Collection(cfg.collection+eventsSuffix, options.Collection().SetWriteConcern(cfg.wc)),
		cfg: cfg, writer: s.writer, clock: s.clock, platform: s.platform, prepare: s.prepare,
	}
	s.dir = &directory{coll: s.collection(cfg.collection + keysSuffix), cfg: cfg, writer: s.writer, clock: s.clock, platform: s.platform}
	return s
}

// collection returns a collection of the database with the settings of
// the lock collection (see Store.Collection).
func (s *Store) collection(name string) *mongo.Collection {
	return s.db.Collection(name, options.Collection().
		SetWriteConcern(s.cfg.wc).
		SetReadPreference(readpref.Primary()).
		SetReadConcern(readconcern.Local()))
}

// Prepare implements driver.Store: it prepares the store, once. It detects
// the deployment, creates the index and starts the server-time estimator.
func (s *Store) Prepare(ctx context.Context) error {
	_, err := s.prepare(ctx)
	return err
}

// ServerTime implements driver.Store, from the estimator Prepare started.
// That estimator samples on writes to the primary. Before Prepare has
// started it, ServerTime returns the zero Interval: driver.Store allows the
// call, and the answer is not valid until then. It never answers from
// PrepareRead's estimator: the engine judges expiry with ServerTime, and a
// hello sample (behind a mongos, the router's clock) is not the clock that
// orders the writes.
func (s *Store) ServerTime() driver.Interval { return s.clock.serverTime() }

// Close implements driver.Store: it cleans up, stops the store's goroutines
// and waits. If this store made a session, it first deletes the sessions
// long expired and the records past their retention, best effort
// (clean). Then it stops the wake-up stream's follower
// and the estimator's goroutine, and waits for them. What it writes on the
// way out shares closeCleanTime, and is skipped when the server seems gone
// (closing.go).
func (s *Store) Close() error {
	s.writer.beginClose()
	if !s.closed.Load() && s.sessions.made.Load() {
		ctx, cancel := s.writer.cleanupContext(closeCleanTime)
		if ctx.Err() == nil {
			s.clean(ctx)
		}
		cancel()
	}
	s.feed.close()
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	s.closed.Store(true)
	return s.clock.close()
}

// clean deletes the sessions long expired and the records past their
// retention (sessionStore.clean, recordStore.clean), best effort.
func (s *Store) clean(ctx context.Context) {
	s.sessions.clean(ctx)
	s.records.clean(ctx)
}

// prepare detects the deployment, creates the index and the estimator on
// first use, and returns the estimator.
func (s *Store) prepare(ctx context.Context) (*clockcheck.Estimator, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if e := s.clock.forWrites(); e != nil {
		return e, nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-s.sem }()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if e := s.clock.forWrites(); e != nil {
		return e, nil
	}
	if err := s.platform.probe(ctx); err != nil {
		return nil, err
	}
	if err := s.platform.check(ctx); err != nil {
		return nil, err
	}
	return s.clock.start(ctx, s.platform.memberSkew(s.platform.topo))
}

// Insert implements driver.Store: one insert.
func (s *Store) Insert(ctx context.Context, d driver.Doc) error {
	insert := func() error {
		return s.writer.write(ctx, insertOp(d), func(ctx context.Context) error {
			_, err := s.coll.InsertOne(ctx, toLockDoc(d))
			return err
		})
	}
	var err error
	if d.Kind == driver.KindClaim {
		// Never sent again: a claim whose insert failed is of unknown
		// outcome, and the engine withdraws it by its nonce.
		err = insert()
	} else {
		// An end marker (or a gate) states a fact that stays true, and has a
		// deterministic _id: sending it again is harmless, and a
		// duplicate key then means an earlier attempt was applied. A
		// transient failure (a failover, a dropped connection, a busy
		// FerretDB) gets up to two more tries at once; after that the
		// engine sends it again in the background.
		err = retry(ctx, s.cfg.logger, endAttempts, "end marker", insert)
	}
	if mongo.IsDuplicateKeyError(err) {
		return driver.ErrExists
	}
	return err
}

// insertOp names an insert for the test hook (withFault): "claim", "gate"
// (gates and the protocol document) or "end".
func insertOp(d driver.Doc) string {
	switch d.Kind {
	case driver.KindClaim:
		return "claim"
	case driver.KindGate, driver.KindProtocol:
		return "gate"
	}
	return "end"
}

// InsertOrdered implements driver.Store with one ordered insert. The server
// applies it one document after the other, stopping at the first duplicate
// key (MongoDB and FerretDB alike).
func (s *Store) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	all := make([]any, len(docs))
	for i, d := range docs {
		all[i] = toLockDoc(d)
	}
	err := s.writer.write(ctx, "claim", func(ctx context.Context) error {
		_, err := s.coll.InsertMany(ctx, all)
		return err
	})
	if err == nil {
		return -1, nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) != 1 || !isDuplicateKey(bwe.WriteErrors[0].Code) {
		return 0, err
	}
	return bwe.WriteErrors[0].Index, nil
}

// isDuplicateKey reports whether a write error code is a duplicate key.
func isDuplicateKey(code int) bool { return code == 11000 || code == 11001 || code == 12582 }

// Get implements driver.Store: a find by _id.
func (s *Store) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	var d lockDoc
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return driver.Doc{}, false, nil
	}
	if err != nil {
		s.clock.noteFailure(err)
		return driver.Doc{}, false, err
	}
	return fromLockDoc(&d), true, nil
}

// Delete implements driver.Store with one ordered delete command. It has a
// statement per ID whose filter is the _id alone, which FerretDB answers by
// ID, not by decoding the collection.
func (s *Store) Delete(ctx context.Context, ids []string) error {
	anyIDs := make([]any, len(ids))
	for i, id := range ids {
		anyIDs[i] = id
	}
	_, err := s.writer.deleteByID(ctx, s.coll, "prune", anyIDs)
	return err
}

// wrap prefixes an error with the operation and what it was on, adding
// ctx's cause when the error does not carry it, and cuts FerretDB's stack
// frames out of its text (errtext.Tidy).
func wrap(ctx context.Context, op, what string, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return errtext.Tidy(fmt.Errorf("dsyncmongo: %s %q: %w: %w", op, what, cause, err))
	}
	return errtext.Tidy(fmt.Errorf("dsyncmongo: %s %q: %w", op, what, err))
}

// checkKey refuses, before any I/O, a key this driver cannot store.
func checkKey(key string) error {
	switch {
	case key == "":
		return ErrEmptyKey
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrKeyTooLong, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}

// jitter returns d ± 20%, at least 1 ms.
func jitter(d time.Duration) time.Duration {
	return max(d*4/5+time.Duration(rand.Int64N(int64(d)*2/5+1)), time.Millisecond)
}

func midpoint(iv clockcheck.Interval) time.Time {
	return iv.Earliest.Add(iv.Latest.Sub(iv.Earliest) / 2).Truncate(time.Millisecond).UTC()
}
