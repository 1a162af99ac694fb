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
)

// Defaults of the options.
const (
	// DefaultDatabase is the database the dsync command uses by default.
	// The command uses it when neither --db nor the connection string names
	// one, and this package's examples use it too. A program whose store is
	// on client.Database(DefaultDatabase) shares its locks, elections and
	// once records with the command's. NewStore takes whatever database it
	// is given; this is only the name every entry point agrees on.
	DefaultDatabase = "dsync"
	// DefaultCollection is the collection the lock documents live in.
	DefaultCollection = "dsync_locks"
	// DefaultWriteTimeout bounds how long the server may take to
	// acknowledge a write (WithWriteTimeout).
	DefaultWriteTimeout = 1 * time.Second
	// DefaultEventAwait is how long a getMore of the wake-up events' cursor
	// waits. It is how long it waits for an event (WithEventAwait), and
	// equals dsync's default safety poll (dsync.DefaultSafetyPoll).
	DefaultEventAwait = 15 * time.Second
)

// An Option configures a Store: what the store is and how it writes.
// How the protocol runs over it (the lease, polling, wake-ups, sweeps,
// the bucket span, observers) is the dsync.Client's. Invalid values make
// NewStore fail.
type Option func(*config) error

type config struct {
	collection string
	wc         *writeconcern.WriteConcern
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
	// (WithMemberSkew); negative: by the deployment (deployment.go).
	memberSkew time.Duration
	// eventAwait bounds each getMore of the events cursor (WithEventAwait).
	eventAwait time.Duration

	// test holds what only tests set; nil in every program.
	test *testHooks
}

// testHooks are the settings of a config that only tests make: this
// package's tests, through options of their own, and other packages'
// through internal/clienthook (hook.go). Behind one pointer, nil in every
// program, so that no production path reads them by mistake.
type testHooks struct {
	// fault, if set, is consulted before each write is sent, by the name
	// write gives it ("claim", "end", "renew", "event", ...), and before
	// the other commands tests fail ("createIndexes", "probe", "shard
	// key", "create events", "event landed", and the loopback detection's
	// "whatsmyuri", "hello" and "explain"); an error it returns stands for
	// the driver's.
	fault func(op string) error
	// ferretDB, if set, overrides the detection of FerretDB
	// (deployment.go).
	ferretDB *bool
	// topology, if set, overrides the detection of the deployment's kind;
	// configDB, if set, names the database whose "collections"
	// collection lists shard keys (else "config").
	topology *topology
	configDB string
	// seenFrom, if set, overrides the address the server tells it sees
	// this process's connection come from (whatsmyuri: loopback.go).
	seenFrom *string
	// readRuns: GetRun reads runs on FerretDB too (the conformance
	// suite's test of it, and the integration suite's workers: run.go).
	readRuns bool
}

// tests returns c's test hooks, made on first use. Only tests call it.
func (c *config) tests() *testHooks {
	if c.test == nil {
		c.test = &testHooks{}
	}
	return c.test
}

// fault consults the test hook for the write named op.
func (c *config) fault(op string) error {
	if c.test != nil && c.test.fault != nil {
		return c.test.fault(op)
	}
	return nil
}

// configDB names the database whose "collections" collection lists shard
// keys.
func (c *config) configDB() string {
	if c.test != nil && c.test.configDB != "" {
		return c.test.configDB
	}
	return "config"
}

// mono is the local monotonic clock's reading.
func (c *config) mono() time.Duration { return c.clock.Monotonic() }

func newConfig(opts []Option) (*config, error) {
	host, _ := os.Hostname()
	c := &config{
		collection: DefaultCollection,
		wc:         writeconcern.Majority(),
		clock:      clockcheck.SystemClock(),
		logger:     slog.Default(),
		host:       host,
		pid:        os.Getpid(),

		writeTimeout:  DefaultWriteTimeout,
		manageIndexes: true,
		memberSkew:    -1,
		eventAwait:    DefaultEventAwait,
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

// WithWriteTimeout bounds how long the server may take to acknowledge each
// write. The bound covers each write of the store, including its wait for
// the write concern. Default: DefaultWriteTimeout (1 s). Zero means no
// bound but the caller's context. It must not be negative.
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
// seconds under load, it is not applied; the store tells FerretDB by
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

// WithIndexManagement sets whether the store creates and checks its index.
// The index is on {key: 1, kind: 1, epoch: 1} of the lock collection.
// Default: on.
//
// On, the first call that needs the collection creates the index
// (createIndexes, which needs the createIndex privilege on the
// collection) and lists the collection's indexes (listIndexes). If
// creating fails (a role without the privilege, common with Atlas custom
// roles, or an index with the same keys under another name or with other
// options), the store carries on if an existing index is equivalent:
// on exactly those keys (each ascending or descending), not unique, with
// no partial filter, no collation other than "simple", and not hidden.
// Otherwise the call fails with an error that matches ErrIndex and names
// the index and the privilege. A unique index on some of key, kind and
// epoch only, such as the unique {key: 1, epoch: 1} index ("key_1_epoch_1")
// an older dsync created, refuses end markers: calls then fail with
// ErrIndex naming it, until it is dropped.
//
// Off, the store never creates or checks indexes: have an
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

// WithClock sets the local clock, for tests that simulate a wrong wall
// clock. Default: clockcheck.SystemClock(). The store measures time on
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

// WithLogger sets where the store reports what it handles itself. At Debug
// it reports failed pruning, late replies, estimator trouble, and a wake-up
// stream that fell back to polling. Once, at Info, on its first call, it
// reports the database and collection it uses. It is also the server-time
// estimator's logger (clockcheck.WithLogger). Default: slog.Default(), as
// in the rest of dsync; pass slog.New(slog.DiscardHandler) to silence it.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("dsyncmongo: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithMaxDrift sets the drift rate the server-time estimator assumes. It
// bounds how fast the local monotonic clock and the server's clock drift
// apart (see clockcheck.WithMaxDrift). Default: clockcheck.DefaultMaxDrift
// (500 ppm). rate must be in [0, 0.1).
func WithMaxDrift(rate float64) Option {
	return func(c *config) error {
		if !(rate >= 0 && rate < 0.1) { // also rejects NaN; clockcheck's range
			return fmt.Errorf("dsyncmongo: max drift %v not in [0, 0.1)", rate)
		}
		c.estimator = append(c.estimator, clockcheck.WithMaxDrift(rate))
		return nil
	}
}

// WithMemberSkew sets the bound assumed on the clock skew of would-be
// primaries. The bound is on how far apart the clocks of the servers that
// can be primary are: the replica-set members, and on a sharded cluster the
// members of the shard holding the sessions collection. Default:
// DefaultMemberSkew (100 ms) on a replica set or through a mongos, 0 on a
// single server (standalone, FerretDB; several FerretDB processes in front
// of one database are several clocks: set it).
//
// Expiry is judged in the primary's time (see ServerTime). A failover
// hands the writes to a member whose clock NTP keeps close to the former
// primary's, but not equal: until the store has sampled the new primary,
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

// WithEventAwait sets how long each getMore of the wake-up events waits.
// Each getMore of the events' cursor waits that long for an event before it
// returns empty and the next is sent. Default: DefaultEventAwait (15 s). An
// event ends the wait at once, so it does not delay wake-ups; it bounds how
// soon a stream that stopped delivering is found broken and reopened, and
// is best set to the Client's safety poll (dsync.ClientWithSafetyPoll),
// which bounds how long a waiter relies on the events alone. At most 5 s on
// FerretDB while other processes wait, since there a long wait costs the
// server CPU. It must be positive.
func WithEventAwait(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dsyncmongo: event await must be positive, got %v", d)
		}
		c.eventAwait = d
		return nil
	}
}
