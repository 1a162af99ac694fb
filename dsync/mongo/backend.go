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
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/chain"
)

// MaxKeyLen is the longest key accepted, in bytes. Lock documents are
// indexed by key, and older MongoDB versions limit an index key to 1024
// bytes.
const MaxKeyLen = 512

// maxOwnerLen bounds owner ids (dsync uses 20-character xids).
const maxOwnerLen = 256

// sessionsSuffix names the sessions collection after the lock collection:
// "dsync_locks_sessions" by default.
const sessionsSuffix = "_sessions"

var _ dsync.Backend = (*Backend)(nil)

// Backend is a dsync.Backend over a MongoDB database. Create it with New.
// It is safe for concurrent use; one Backend per process and database is
// the intended use, shared by all its Mutexes, so that they share one
// session and one renewal command per interval.
type Backend struct {
	db       *mongo.Database
	coll     *mongo.Collection // claims, end markers, floors
	sessions *mongo.Collection
	// clockColl is the sessions collection with write concern 1, for the
	// server-time samples (servertime.go).
	clockColl *mongo.Collection
	events    *mongo.Collection // wake-up events (events.go)
	cfg       *config
	eng       *chain.Engine
	resend    *chain.Resender // sends ends of unknown outcome again
	wake      *wakeups
	relocks   relocks // takeovers, for a Mutex that locks again (relock.go)

	// sem serializes preparation (index creation, estimator start) and
	// Close, while letting a waiting caller give up when its ctx ends.
	sem     chan struct{}
	indexed bool        // guarded by sem
	probed  bool        // guarded by sem: ferret and topo are known
	topo    topology    // guarded by sem
	ferret  atomic.Bool // the server is FerretDB (deployment.go)
	est     atomic.Pointer[clockcheck.Estimator]
	closed  atomic.Bool
}

// New returns a backend storing locks in db (collection DefaultCollection
// unless WithCollection says otherwise, and sessions and wake-up events in
// collections named after it). It does no I/O: the index is created, and
// the server's clock measured, by the first call that needs them, with
// that call's context; a failure is returned to that call and retried by
// the next.
func New(db *mongo.Database, opts ...Option) (*Backend, error) {
	if db == nil {
		return nil, ErrNilDatabase
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	// The clock that matters is the primary's, which orders the writes.
	primary := db.Client().Database(db.Name(), options.Database().SetReadPreference(readpref.Primary()))
	b := &Backend{
		db:     primary,
		events: primary.Collection(cfg.collection+eventsSuffix, options.Collection().SetWriteConcern(cfg.wc)),
		cfg:    cfg,
		sem:    make(chan struct{}, 1),
	}
	b.coll = b.Collection(cfg.collection)
	b.sessions = b.Collection(cfg.collection + sessionsSuffix)
	b.clockColl = b.sessions.Clone(options.Collection().SetWriteConcern(clockWriteConcern))
	b.eng, err = chain.New(store{b}, clock{b}, cfg.chain)
	if err != nil {
		return nil, fmt.Errorf("dsyncmongo: %w", err)
	}
	b.resend = chain.NewResender(b.eng, func(pending int, err error) {
		b.cfg.logger.Debug("dsyncmongo: ends of unknown outcome not yet confirmed", "pending", pending, "err", err)
	})
	b.wake = newWakeups(b)
	return b, nil
}

// Collection returns a collection of the backend's database with the
// settings of its lock collection, whatever the database's or client's:
// reads go to the primary at read concern local (a secondary's or a
// majority snapshot's view may lag, and a claim must see every end that
// was acknowledged), and writes use the backend's write concern
// (WithWriteConcern, majority by default). Package leadermongo keeps its
// member documents in such a collection.
func (b *Backend) Collection(name string) *mongo.Collection {
	return b.db.Collection(name, options.Collection().
		SetWriteConcern(b.cfg.wc).
		SetReadPreference(readpref.Primary()).
		SetReadConcern(readconcern.Local()))
}

// Close stops the goroutine that keeps the server-time estimate current,
// and the one that follows wake-up events, waiting for them. Calls made
// afterwards return ErrClosed; Mutexes still using the backend lose their
// holds when renewals fail. It does not disconnect the client. Close is
// idempotent and returns nil.
func (b *Backend) Close() error {
	b.sem <- struct{}{}
	defer func() { <-b.sem }()
	b.closed.Store(true)
	b.wake.stop()
	b.resend.Close()
	if e := b.est.Load(); e != nil {
		return e.Close()
	}
	return nil
}

// OpenSession implements dsync.Backend: one insert into the sessions
// collection, and a delete of the sessions that expired over an hour ago.
func (b *Backend) OpenSession(ctx context.Context, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("dsyncmongo: TTL must be positive, got %v", ttl)
	}
	if _, err := b.prepare(ctx); err != nil {
		return "", err
	}
	id, _, err := b.eng.OpenSession(ctx, ttl)
	if err != nil {
		return "", b.wrap(ctx, "open session", "", err)
	}
	b.cleanSessions(ctx)
	if b.cfg.wakeups {
		b.wake.start()
	}
	return id, nil
}

// sessionRetention is how long after its expiry a session document is
// kept. Deleting it changes nothing for its claims (a claim whose session
// is gone counts as dead, as it did once the session expired), but a
// findAndModify by _id and a read of a session's documents cost FerretDB
// time in proportion to the collection's size, and renewals and waiters'
// looks at a holder's session are such commands.
const sessionRetention = time.Hour

// cleanSessions deletes the sessions that expired more than
// sessionRetention ago. Best effort; run when a session is opened.
func (b *Backend) cleanSessions(ctx context.Context) {
	before := b.est.Load().Now().Earliest.Add(-sessionRetention)
	err := b.write(ctx, "clean sessions", func(ctx context.Context) error {
		_, err := b.sessions.DeleteMany(ctx, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lt", Value: before}}}})
		return err
	})
	if err != nil {
		b.cfg.logger.Debug("dsyncmongo: deleting expired sessions failed", "err", err)
	}
}

// RenewSession implements dsync.Backend: one findAndModify of the
// session's document by _id, raising its expiry with $max, whatever the
// number of holds and waiting claims (after a renewal of unknown outcome,
// the insert of the session's next document; see chain.Engine.RenewSession).
// Afterwards it sends again any end marker whose outcome was unknown.
func (b *Backend) RenewSession(ctx context.Context, session string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("dsyncmongo: TTL must be positive, got %v", ttl)
	}
	if _, err := b.prepare(ctx); err != nil {
		return err
	}
	found, _, err := b.eng.RenewSession(ctx, session, ttl)
	if err != nil {
		return b.wrap(ctx, "renew session", "", err)
	}
	if !found {
		return fmt.Errorf("%w: %s", dsync.ErrSessionGone, session)
	}
	if n, err := b.eng.Flush(ctx); err != nil {
		b.cfg.logger.Warn("dsyncmongo: ends of unknown outcome not yet confirmed", "pending", n, "err", err)
	}
	return nil
}

// Claim implements dsync.Backend. An uncontended claim is one insert; a
// claim behind others costs one more insert per epoch lost to a race, or
// a newest-first read after four. A Mutex that claims again less than the
// poll interval after it took the key over from another owner's release
// first waits, at most until then, for that owner to claim again, reading
// by _id the claims above its last one instead of meeting them as
// duplicate keys (relock.go): processes that lock again in a loop queue in
// the order they released.
func (b *Backend) Claim(ctx context.Context, key, owner, session string, try bool) (dsync.Claim, error) {
	if err := checkKey(key); err != nil {
		return dsync.Claim{}, err
	}
	if err := checkOwner(owner); err != nil {
		return dsync.Claim{}, err
	}
	if session == "" {
		return dsync.Claim{}, errors.New("dsyncmongo: empty session")
	}
	if _, err := b.prepare(ctx); err != nil {
		return dsync.Claim{}, err
	}
	var (
		c   *chain.Claim
		err error
	)
	if try {
		c, err = b.eng.TryClaim(ctx, key, owner, session)
	} else {
		b.afterPredecessor(ctx, key, owner)
		c, err = b.eng.Claim(ctx, key, owner, session, false)
	}
	var busy *chain.BusyError
	if errors.As(err, &busy) {
		return dsync.Claim{}, &dsync.HeldError{Key: key, Owner: busy.Blocker.Owner, Token: busy.Blocker.Epoch}
	}
	if err != nil {
		return dsync.Claim{}, b.wrap(ctx, "claim", key, err)
	}
	b.wake.claimed(key, c.Epoch)
	b.wake.claimSeen(key, c.Epoch)
	return dsync.Claim{Key: key, Owner: owner, Session: session, Token: c.Epoch, Nonce: c.Nonce}, nil
}

// Await implements dsync.Backend. It walks down the queue below the claim
// (timing: one read per end it has not seen yet) and, while a live claim
// is ahead, waits for a wake-up event naming that claim's end, or until
// that claim's session can have expired, or for the poll interval (the
// safety poll interval while wake-up events flow).
func (b *Backend) Await(ctx context.Context, c dsync.Claim) error {
	if err := checkKey(c.Key); err != nil {
		return err
	}
	est, err := b.prepare(ctx)
	if err != nil {
		return err
	}
	cc := chain.Resume(c.Key, c.Owner, c.Session, c.Nonce, c.Token)
	for {
		head, blocker, err := b.eng.Walk(ctx, cc)
		if err != nil {
			return b.wrap(ctx, "wait for", c.Key, err)
		}
		if head {
			b.relocks.tookOver(c.Key, c.Owner, c.Token, cc, b.mono())
			return nil
		}
		if err := b.wake.wait(ctx, est, c.Key, blocker); err != nil {
			return err
		}
	}
}

// End implements dsync.Backend: one insert of the end marker, and one
// wake-up event if another process announced it waits for this claim.
func (b *Backend) End(ctx context.Context, c dsync.Claim, held bool) error {
	if err := checkKey(c.Key); err != nil {
		return err
	}
	if c.Token == 0 || c.Token > 1<<63-1 || c.Nonce == "" {
		return fmt.Errorf("dsyncmongo: end %q: invalid claim (token %d)", c.Key, c.Token)
	}
	est, err := b.prepare(ctx)
	if err != nil {
		return err
	}
	if err := b.eng.End(ctx, chain.Resume(c.Key, c.Owner, c.Session, c.Nonce, c.Token), held); err != nil {
		b.resend.Kick() // sent again in the background until it lands
		return b.wrap(ctx, "end", c.Key, err)
	}
	b.wake.ended(ctx, est, c.Key, c.Token)
	return nil
}

// LockInfo describes who holds a key, or waits first for it.
type LockInfo struct {
	Key   string
	Token uint64 // the claim's epoch: larger than every earlier hold's
	Owner string // the owner id the holder's Mutex claimed with
	Host  string
	PID   int
	// AcquiredAt is the claimant's estimate of the server time when it
	// queued; ExpiresAt is when its session expires unless renewed, in
	// server time.
	AcquiredAt time.Time
	ExpiresAt  time.Time
	// Live reports whether the claim had not ended and its session had
	// not expired when read. Current returns only live claims.
	Live bool
}

// Current reads the claim at the head of key's queue: the holder, or the
// claim about to hold. It returns ErrNoLock (wrapped) if nothing holds or
// waits for the key.
func (b *Backend) Current(ctx context.Context, key string) (LockInfo, error) {
	if err := checkKey(key); err != nil {
		return LockInfo{}, err
	}
	if _, err := b.prepare(ctx); err != nil {
		return LockInfo{}, err
	}
	head, found, err := b.eng.Head(ctx, key)
	if err != nil {
		return LockInfo{}, b.wrap(ctx, "read", key, err)
	}
	if !found {
		return LockInfo{}, fmt.Errorf("%w %q", ErrNoLock, key)
	}
	var d lockDoc
	if err := b.coll.FindOne(ctx, bson.D{{Key: "_id", Value: head.ID}}).Decode(&d); err != nil {
		return LockInfo{}, b.wrap(ctx, "read", key, err)
	}
	s, _, err := b.readSession(ctx, d.Session)
	if err != nil {
		return LockInfo{}, b.wrap(ctx, "read", key, err)
	}
	return LockInfo{
		Key: key, Token: uint64(d.Epoch), Owner: d.Owner, Host: d.Host, PID: d.PID,
		AcquiredAt: d.At, ExpiresAt: s.ExpiresAt, Live: true,
	}, nil
}

// jitter returns d ± 20%, at least 1 ms.
func jitter(d time.Duration) time.Duration {
	return max(d*4/5+time.Duration(rand.Int64N(int64(d)*2/5+1)), time.Millisecond)
}

// prepare creates the index and the estimator on first use, and returns
// the estimator.
func (b *Backend) prepare(ctx context.Context) (*clockcheck.Estimator, error) {
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if e := b.est.Load(); e != nil {
		return e, nil
	}
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-b.sem }()
	if b.closed.Load() {
		return nil, ErrClosed
	}
	if e := b.est.Load(); e != nil {
		return e, nil
	}
	if !b.probed {
		// Before any write: it decides the write timeout.
		ferret, err := b.detectFerretDB(ctx)
		if err != nil {
			return nil, err
		}
		topo := topologySingle
		switch {
		case b.cfg.topology != nil:
			topo = *b.cfg.topology
		case !ferret:
			if topo, err = b.detectTopology(ctx); err != nil {
				return nil, err
			}
		}
		b.ferret.Store(ferret)
		b.topo = topo
		b.probed = true
	}
	if b.topo == topologySharded {
		if err := b.checkSharding(ctx); err != nil {
			return nil, err
		}
	}
	if !b.indexed && b.cfg.manageIndexes {
		// The (key, kind, epoch) index serves the newest-first read and
		// pruning. It is not unique: a claim and its marker share key and
		// epoch. The deterministic _id alone makes inserts exclusive.
		if err := b.ensureIndex(ctx); err != nil {
			return nil, err
		}
	}
	b.indexed = true
	opts := append([]clockcheck.Option{
		clockcheck.WithClock(b.cfg.clock), clockcheck.WithLogger(b.cfg.logger),
		clockcheck.WithProbe(b.probeTime), clockcheck.WithMemberSkew(b.memberSkew(b.topo)),
	}, b.cfg.estimator...)
	e, err := clockcheck.NewEstimator(ctx, nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("dsyncmongo: measuring the server's clock: %w", err)
	}
	b.est.Store(e)
	return e, nil
}

func (b *Backend) mono() time.Duration { return b.cfg.clock.Monotonic() }

// wrap prefixes a driver error with the operation and key, adding ctx's
// cause when the driver's error does not carry it. An engine error saying
// the store lost the key's history is marked dsync.ErrReset.
func (b *Backend) wrap(ctx context.Context, op, key string, err error) error {
	if errors.Is(err, chain.ErrReset) {
		return fmt.Errorf("dsyncmongo: %s %q: %w: %w", op, key, dsync.ErrReset, err)
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("dsyncmongo: %s %q: %w: %w", op, key, cause, err)
	}
	return fmt.Errorf("dsyncmongo: %s %q: %w", op, key, err)
}

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

func checkOwner(owner string) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: empty", ErrInvalidOwner)
	case len(owner) > maxOwnerLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidOwner, len(owner), maxOwnerLen)
	case !utf8.ValidString(owner):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidOwner)
	}
	return nil
}

func midpoint(iv clockcheck.Interval) time.Time {
	return iv.Earliest.Add(iv.Latest.Sub(iv.Earliest) / 2).Truncate(time.Millisecond).UTC()
}
