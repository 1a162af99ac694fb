package dsyncmongo

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// Defaults of the options.
const (
	// DefaultCollection is the collection the lock documents live in.
	DefaultCollection = "dsync_locks"
	// DefaultPollInterval is how often a waiter checks the claim ahead of
	// it when wake-up events are off or their stream is down.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultSafetyPoll caps how long a waiter relies on wake-up events
	// alone (WithSafetyPoll).
	DefaultSafetyPoll = 15 * time.Second
	// DefaultWriteTimeout bounds how long the server may take to
	// acknowledge a write (WithWriteTimeout).
	DefaultWriteTimeout = 1 * time.Second
)

// An Option configures a Backend. Invalid values make New fail.
type Option func(*config) error

type config struct {
	collection string
	wc         *writeconcern.WriteConcern
	poll       time.Duration
	wakeups    bool
	safetyPoll time.Duration
	clock      clockcheck.Clock
	logger     *slog.Logger
	estimator  []clockcheck.Option // extra estimator options (WithMaxDrift)
	host       string
	pid        int
	// writeTimeout bounds each write on servers that replicate
	// (WithWriteTimeout); 0: no bound but the caller's context.
	writeTimeout time.Duration
	// manageIndexes: prepare creates the (key, kind, epoch) index
	// (WithIndexManagement).
	manageIndexes bool
	// memberSkew is the bound on replica-set members' clock skew
	// (WithMemberSkew); negative: by the deployment (servertime.go).
	memberSkew time.Duration

	// Tests only. fault, if set, is consulted before the writes named
	// "createIndexes", "claim", "end", "renew", "probe", "shard key" and "create events" are
	// sent; an error it returns stands for the driver's. ferretDB, if
	// set, overrides the detection of FerretDB (deployment.go).
	fault    func(op string) error
	ferretDB *bool
	// topology, if set, overrides the detection of the deployment's kind
	// (servertime.go); configDB names the database whose "collections"
	// collection lists shard keys ("config").
	topology *topology
	configDB string

	// idleAge: the Client sweeps keys idle this long (0: never); span:
	// the bucket span, if set (0: the store's, or the default).
	idleAge time.Duration
	span    time.Duration

	// client holds the Client's test-only settings (package
	// internal/clienthook).
	client []dsync.ClientOption
	// observer is the Client's observer option (WithObserver), if any.
	observer *dsync.ClientOption
}

func newConfig(opts []Option) (*config, error) {
	host, _ := os.Hostname()
	c := &config{
		collection: DefaultCollection,
		wc:         writeconcern.Majority(),
		poll:       DefaultPollInterval,
		wakeups:    true,
		safetyPoll: DefaultSafetyPoll,
		clock:      clockcheck.SystemClock(),
		logger:     slog.Default(),
		host:       host,
		pid:        os.Getpid(),

		writeTimeout:  DefaultWriteTimeout,
		manageIndexes: true,
		memberSkew:    -1,
		configDB:      "config",
		idleAge:       dsync.DefaultIdleAge,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("dsyncmongo: nil option")
		}
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// clientOptions are the options of the Backend's Client.
func (c *config) clientOptions() []dsync.ClientOption {
	opts := []dsync.ClientOption{
		dsync.ClientWithLogger(c.logger), dsync.ClientWithWakeups(c.wakeups),
		dsync.ClientWithPollInterval(c.poll), dsync.ClientWithSafetyPoll(c.safetyPoll),
		dsync.ClientWithIdleAge(c.idleAge),
	}
	if c.span > 0 {
		opts = append(opts, dsync.ClientWithBucketSpan(c.span))
	}
	if c.observer != nil {
		opts = append(opts, *c.observer)
	}
	return append(opts, c.client...)
}

// WithIdleAge sets how long a key must have been idle (nobody holding or
// waiting for it) before the backend's sweeps delete its documents. A
// compacted key costs nothing; its next Lock starts afresh, with a token
// above every token it had. Default: dsync.DefaultIdleAge (30 minutes).
// It must be at least four bucket spans (20 minutes with the default
// span; see WithBucketSpan); 0 turns this process's sweeps off (another
// process may still sweep).
func WithIdleAge(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("dsyncmongo: idle age must not be negative, got %v", d)
		}
		c.idleAge = d
		return nil
	}
}

// WithBucketSpan sets the store's bucket span: the unit of time in which
// a key's queue proves it is the live one (see docs/architecture.md).
// Every process on a store must use the same: the first process records
// its span in the lock collection, and a process given another one fails
// every acquire with an error wrapping dsync.ErrSpan, also when the
// collection was emptied and first written by a process of another span
// while this one ran (see docs/operations.md). Default: the span
// recorded, or 5 minutes. A lock's TTL
// must be at most the span. Shorter spans allow shorter idle ages (tests,
// benchmarks) and cost a holder one insert per span and key held.
func WithBucketSpan(d time.Duration) Option {
	return func(c *config) error {
		if d < 4*time.Second {
			return fmt.Errorf("dsyncmongo: bucket span %v is below the minimum 4s", d)
		}
		c.span = d
		return nil
	}
}

// WithCollection sets the collection of lock documents. Default:
// DefaultCollection ("dsync_locks"). Every process locking the same keys
// must use the same collection. The name must be a valid, non-system
// MongoDB collection name.
func WithCollection(name string) Option {
	return func(c *config) error {
		switch {
		case name == "":
			return errors.New("dsyncmongo: empty collection name")
		case strings.ContainsAny(name, "$\x00"):
			return fmt.Errorf("dsyncmongo: invalid collection name %q: contains '$' or NUL", name)
		case strings.HasPrefix(name, "system."):
			return fmt.Errorf("dsyncmongo: invalid collection name %q: system collection", name)
		}
		c.collection = name
		return nil
	}
}

// WithWriteConcern sets the write concern of every write. Default:
// majority. On a replica set, an insert that only a stale primary accepted
// is then never acknowledged, so it never counts as a hold (a lower write
// concern lets two processes hold one lock across a failover). On a
// standalone server and on FerretDB, majority is the same as w:1. An
// unacknowledged (w:0) write concern is an error: the protocol needs to
// know whether its inserts succeeded.
//
// The Go driver (v2) has no wtimeout in a write concern: how long the
// server may wait for the write concern is set by WithWriteTimeout.
func WithWriteConcern(wc *writeconcern.WriteConcern) Option {
	return func(c *config) error {
		switch {
		case wc == nil:
			return errors.New("dsyncmongo: nil write concern")
		case !wc.IsValid():
			return fmt.Errorf("dsyncmongo: invalid write concern %+v", *wc)
		case !wc.Acknowledged():
			return errors.New("dsyncmongo: unacknowledged write concern")
		}
		c.wc = wc
		return nil
	}
}

// WithWriteTimeout bounds how long the server may take to acknowledge
// each write of the backend, including its wait for the write concern.
// Default: DefaultWriteTimeout (1 s). Zero means no bound but the
// caller's context. It must not be negative.
//
// Without a bound, a majority write on a replica set that cannot reach a
// majority (a primary-secondary-arbiter set whose secondary is down, say)
// waits until the caller's context ends: a session renewal would hang
// until the session's deadline, a Lock until its context ends. The write
// is sent with a deadline of d (the driver sends it as the command's
// maxTimeMS, which bounds the server's wait for the write concern, and
// stops waiting for the reply at the deadline); the call fails with an
// error that matches ErrWriteTimeout, and its outcome is unknown, as for
// any failed write (the protocol is built for that: see "Writes that
// land late" in the package documentation). The default, 1 s, is below
// the 2 s within which a claim's reply must arrive to count without
// judging the key's coverage again, and far above a healthy write's few
// milliseconds, so it fires only when the deployment cannot acknowledge
// writes.
//
// The bound applies on MongoDB. On FerretDB, which does not replicate
// (majority is w:1 there) and whose writes can legitimately take
// seconds under load, it is not applied; the backend tells FerretDB by
// its buildInfo reply.
func WithWriteTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("dsyncmongo: write timeout must not be negative, got %v", d)
		}
		c.writeTimeout = d
		return nil
	}
}

// WithIndexManagement sets whether the backend creates and checks the
// index on {key: 1, kind: 1, epoch: 1} of the lock collection. Default:
// on.
//
// On, the first call that needs the collection creates the index
// (createIndexes, which needs the createIndex privilege on the
// collection) and lists the collection's indexes (listIndexes). If
// creating fails (a role without the privilege, common with Atlas custom
// roles, or an index with the same keys under another name or with other
// options), the backend carries on if an existing index is equivalent:
// on exactly those keys (each ascending or descending), not unique, with
// no partial filter, no collation other than "simple", and not hidden.
// Otherwise the call fails with an error that matches ErrIndex and names
// the index and the privilege. A unique index on some of key, kind and
// epoch only, such as the unique {key: 1, epoch: 1} index ("key_1_epoch_1")
// an older dsync created, refuses end markers: calls then fail with
// ErrIndex naming it, until it is dropped.
//
// Off, the backend never creates or checks indexes: have an
// administrator create the index beforehand, for example
//
//	db.dsync_locks.createIndex({key: 1, kind: 1, epoch: 1})
//
// and make sure no unique index other than _id's is left on the
// collection. Neither exclusion nor cost depends on the index: the
// deterministic _id of each claim makes inserts exclusive, and the
// protocol reads and deletes a key's documents by _id only.
func WithIndexManagement(on bool) Option {
	return func(c *config) error {
		c.manageIndexes = on
		return nil
	}
}

// WithPollInterval sets how often a waiter checks the claim ahead of it
// in the queue when wake-up events are off (WithWakeups) or their stream
// is down. Default: DefaultPollInterval (250 ms). A waiter also checks when
// that claim's session can have expired, whichever comes first. It must
// be positive. It also bounds how long after taking a key over a Mutex
// that locks it again waits for the process it took over from to queue
// again first (see Backend.Claim).
func WithPollInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dsyncmongo: poll interval must be positive, got %v", d)
		}
		c.poll = d
		return nil
	}
}

// WithClock sets the local clock, for tests that simulate a wrong wall
// clock. Default: clockcheck.SystemClock(). The backend measures time on
// its Monotonic reading and judges expiry in server time through a
// clockcheck.Estimator using this clock, so the wall clock may be off by
// any amount.
func WithClock(clk clockcheck.Clock) Option {
	return func(c *config) error {
		if clk == nil {
			return errors.New("dsyncmongo: nil clock")
		}
		c.clock = clk
		return nil
	}
}

// WithLogger sets where the backend reports what it handles itself:
// failed pruning, late replies, estimator trouble, a wake-up stream that
// fell back to polling. It is also the server-time estimator's logger
// (clockcheck.WithLogger). Default: slog.Default(), as in the rest of
// dsync; pass slog.New(slog.DiscardHandler) to silence it.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("dsyncmongo: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithObserver sets the observer of the Backend's Client: it is told of
// waits, holds, losses and renewals, for metrics (dsync.Observer).
// Default: none.
func WithObserver(o dsync.Observer) Option {
	return func(c *config) error {
		opt := dsync.ClientWithObserver(o)
		c.observer = &opt
		return nil
	}
}

// WithMaxDrift sets the bound the server-time estimator assumes on how fast
// the local monotonic clock and the server's clock drift apart (see
// clockcheck.WithMaxDrift). Default: clockcheck.DefaultMaxDrift (500 ppm).
// rate must be in [0, 0.1).
func WithMaxDrift(rate float64) Option {
	return func(c *config) error {
		if !(rate >= 0 && rate < 0.1) { // also rejects NaN; clockcheck's range
			return fmt.Errorf("dsyncmongo: max drift %v not in [0, 0.1)", rate)
		}
		c.estimator = append(c.estimator, clockcheck.WithMaxDrift(rate))
		return nil
	}
}

// WithWakeups turns wake-ups through events on or off. Default: on.
//
// With wake-ups, each Backend that holds or waits for a lock follows a
// small capped collection (the lock collection's name + "_events", 1 MiB,
// created on first use) with one tailable-await cursor, in one goroutine
// that Close stops. A waiter announces there which claim it waits for (one
// insert when it starts waiting on it); the owner of that claim, after
// ending it, appends one "ended" event, which wakes the waiter at once;
// the waiter confirms with one read of the end marker. Queues live in the
// lock collection, never in the events: a missed event only costs latency,
// at most the safety poll interval (WithSafetyPoll), and a waiter still
// checks when the claim ahead of it can have expired. An uncontended
// Lock+Unlock costs two commands.
//
// If the stream fails (cursor killed, server restarted), waiters fall
// back to polling (WithPollInterval), with a logged notice, while the
// backend keeps trying to reopen the stream. If the store has no capped
// collections or tailable cursors (the Stable API in strict mode, Amazon
// DocumentDB, Atlas serverless), or the events collection exists but is
// not capped, the backend logs that once, at level Warn, and waiters poll
// for good. Off, waiters poll, and no events collection is used.
func WithWakeups(on bool) Option {
	return func(c *config) error {
		c.wakeups = on
		return nil
	}
}

// WithSafetyPoll sets how long a waiter sleeps at most, relying on
// wake-up events, before it checks the claim ahead of it again. Default:
// DefaultSafetyPoll (15 s). It bounds the extra latency of a missed event;
// a claim ahead whose session expires is noticed at its expiry regardless.
// The event cursor's getMore commands wait up to as long (at most 5 s on
// FerretDB while other processes wait, since there a long wait costs the
// server CPU). It must be positive.
func WithSafetyPoll(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dsyncmongo: safety poll interval must be positive, got %v", d)
		}
		c.safetyPoll = d
		return nil
	}
}

// WithMemberSkew sets the bound assumed on how far apart the clocks of the
// servers that can be primary are (replica-set members, and on a sharded
// cluster the members of the shard holding the sessions collection).
// Default: DefaultMemberSkew (100 ms) on a replica set or through a
// mongos, 0 on a single server (standalone, FerretDB; several FerretDB
// processes in front of one backend database are several clocks: set it).
//
// Expiry is judged in the primary's time (see ServerTime). A failover
// hands the writes to a member whose clock NTP keeps close to the former
// primary's, but not equal: until the backend has sampled the new primary,
// which it does at once when a command fails because the primary changed,
// or else within a minute, every server-time interval is wider by this
// bound on each side, so that it holds the new primary's time too. It
// costs a waiter up to twice the bound when it waits for a dead session's
// expiry. If members' clocks can be further apart than the bound, two
// processes can hold one lock for the difference after a failover: keep
// the members' clocks synchronized (NTP), as MongoDB itself requires, or
// raise the bound. d must be at least 0.
func WithMemberSkew(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("dsyncmongo: member skew must be at least 0, got %v", d)
		}
		c.memberSkew = d
		return nil
	}
}

func init() {
	clienthook.MongoOption = func(s clienthook.Settings) any {
		return Option(func(c *config) error {
			c.client = append(c.client, clienthook.Option(s).(dsync.ClientOption))
			return nil
		})
	}
}
