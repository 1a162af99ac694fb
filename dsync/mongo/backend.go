package dsyncmongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
)

// MaxKeyLen is the longest key accepted, in bytes. Lock documents are
// indexed by key, and older MongoDB versions limit an index key to 1024
// bytes.
const MaxKeyLen = 512

// Backend is a dsync.Client over a MongoDB database: every Mutex (and,
// through package leader/mongo, every Election) made on it shares its
// lease, renewed with one command per interval. Create it with New, and
// Close it when done: Close ends every claim made through it, so that
// other processes go on at once, and stops its goroutines. One Backend per
// process and database is the intended use. It is safe for concurrent use.
type Backend struct {
	c *dsync.Client
	s *lockStore
}

var _ dsync.Backend = (*Backend)(nil)

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
	s := newLockStore(db, cfg)
	c, err := dsync.NewClient(s, cfg.clientOptions()...)
	if err != nil {
		return nil, fmt.Errorf("dsyncmongo: %w", err)
	}
	return &Backend{c: c, s: s}, nil
}

// Client returns the backend's Client: the lease and the protocol that
// every primitive made on the backend shares.
func (b *Backend) Client() *dsync.Client { return b.c }

// Close ends every claim made through the backend (holds are lost, then
// released; waiting claims are withdrawn), so that other processes go on
// at once, and stops its goroutines (the wake-up stream's follower, the
// server-time estimate), waiting for them. Calls made afterwards fail
// with ErrClosed. It does not disconnect the client. Close is idempotent.
//
// When the server cannot be reached, Close is bounded as
// dsync.Client.Close says: what it could not end within
// dsync.DefaultReleaseTimeout, the lease ends. Its own cleaning on the
// way out (sessions expired long ago, events its wake-up stream found
// left over) takes at most 2 s more, and is skipped when the server left
// a write unanswered and has answered none since.
func (b *Backend) Close() error { return b.c.Close() }

// Collection returns a collection of the backend's database with the
// settings of its lock collection, whatever the database's or client's:
// reads go to the primary at read concern local (a secondary's or a
// majority snapshot's view may lag, and a claim must see every end that
// was acknowledged), and writes use the backend's write concern
// (WithWriteConcern, majority by default). Package leadermongo keeps its
// member documents in such a collection.
func (b *Backend) Collection(name string) *mongo.Collection { return b.s.collection(name) }

// ServerTime returns the interval the server's current time certainly lies
// in, from the estimate this backend judges expiry with (measuring the
// server's clock first if no call has yet).
func (b *Backend) ServerTime(ctx context.Context) (clockcheck.Interval, error) {
	est, err := b.s.prepare(ctx)
	if err != nil {
		return clockcheck.Interval{}, err
	}
	return est.Now(), nil
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
	// Live reports whether the claim had not ended when read. Current
	// returns only live claims.
	Live bool
}

// Current reads the claim at the head of key's queue: the holder, or the
// claim about to hold. It returns ErrNoLock (wrapped) if nothing holds or
// waits for the key. The Client's Queue returns the whole queue.
func (b *Backend) Current(ctx context.Context, key string) (LockInfo, error) {
	q, err := b.c.Queue(ctx, key)
	if err != nil {
		return LockInfo{}, err
	}
	if len(q) == 0 {
		return LockInfo{}, fmt.Errorf("%w %q", ErrNoLock, key)
	}
	h := q[0]
	return LockInfo{
		Key: key, Token: h.Token, Owner: h.Owner, Host: h.Host, PID: h.PID,
		AcquiredAt: h.QueuedAt, ExpiresAt: h.ExpiresAt, Live: true,
	}, nil
}
