package dsync

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/lease"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// Defaults of the lease (the Client's options) and of a primitive's.
const (
	// DefaultTTL is the default lease length. The lease length is how long
	// a hold stays valid without a successful renewal, and so how long a
	// crashed holder blocks others.
	DefaultTTL = 15 * time.Second
	// DefaultOutageGrace is how long an outage of the whole store a
	// Client's holds ride through by default (ClientWithOutageGrace):
	// MongoDB elects a new primary within electionTimeoutMillis (10 s by
	// default) and a median under 12 s, so 30 s covers an election, a
	// stepdown and a restart with room to spare.
	DefaultOutageGrace = 30 * time.Second
	// MinTTL is the shortest TTL accepted. A hold counts only if the
	// store's reply arrives within TTL − TTL/20 of the request, and is
	// renewed every TTL/3: below this, a round trip to a server on another
	// machine, or a scheduling hiccup, is enough to lose every hold.
	MinTTL = 100 * time.Millisecond
	// DefaultReleaseTimeout bounds the release Unlock sends, unless the TTL
	// is shorter. The bound includes its wait for a renewal in flight. A
	// release that does not finish in time is left undone, and the lease
	// expires by itself after the TTL.
	DefaultReleaseTimeout = 2 * time.Second
	// DefaultTryTimeout bounds the one attempt of every try, unless the TTL
	// is shorter. The tries are TryLock, TryRLock and TryAcquire, and their
	// Context forms. An attempt the store does not answer in time fails,
	// whatever the store does meanwhile.
	DefaultTryTimeout = 2 * time.Second
)

// An Option configures a primitive: a Mutex, RWMutex, Semaphore or Once.
// Each option names the primitives it fits; the constructor returns an
// error for an option its primitive has no use for, as for a bad value
// (a negative duration, an empty namespace) or a nil option.
//
//	option               Mutex  RWMutex  Semaphore  Once
//	WithProgressDeadline   x       x         x
//	WithNamespace          x
//	WithReadLinger                 x
//	WithForgetAfter                                   x
//
// What is the process's, not a primitive's (the lease, the logger, the
// error handler, the release and try timeouts), is the Client's
// (ClientOption); a call's own bound is its context.
type Option func(*config) error

// errNilOption is a nil option's error.
var errNilOption = errors.New("dsync: nil option")

// The primitives, as options name them (config.fits).
const (
	primMutex     = "Mutex"
	primRWMutex   = "RWMutex"
	primSemaphore = "Semaphore"
	primOnce      = "Once"
)

// config is a primitive's settings: its options, and what its Client
// gave it (the lease's ttl and clock, the logger, error handler and
// timeouts), which no option of the primitive's sets.
type config struct {
	prim        string        // the primitive being made: primMutex...
	release     time.Duration // 0: min(DefaultReleaseTimeout, ttl)
	try         time.Duration // 0: min(DefaultTryTimeout, ttl)
	logger      *slog.Logger
	onError     func(error)
	namespace   string        // a Mutex's (WithNamespace)
	forgetAfter time.Duration // a Once's: 0 keeps its done record
	readLinger  time.Duration // an RWMutex's (WithReadLinger): 0 is off
	progress    time.Duration // WithProgressDeadline's: 0 is off

	ttl   time.Duration // the Client's (ClientWithTTL)
	clock lease.Clock   // the Client's (clienthook)
}

// newConfig applies opts for the primitive prim over what the Client cc
// gives every primitive.
func newConfig(prim string, opts []Option, cc *clientConfig) (config, error) {
	c := config{prim: prim, ttl: cc.lease.TTL, clock: cc.lease.Clock, logger: cc.logger, onError: cc.onError,
		release: cc.release, try: cc.try}
	for _, opt := range opts {
		if opt == nil {
			return config{}, errNilOption
		}
		if err := opt(&c); err != nil {
			return config{}, err
		}
	}
	return c, nil
}

// fits refuses the option named option unless the primitive being made
// is one of prims.
func (c *config) fits(option string, prims ...string) error {
	if !slices.Contains(prims, c.prim) {
		return fmt.Errorf("dsync: New%s: %s is an option of %s only, not of a %s",
			c.prim, option, strings.Join(prims, ", "), c.prim)
	}
	return nil
}

// releaseTimeout is the bound Unlock gives its release.
func (c *config) releaseTimeout() time.Duration {
	if c.release > 0 {
		return c.release
	}
	return min(DefaultReleaseTimeout, c.ttl)
}

// tryTimeout is the bound of a Try method's one attempt.
func (c *config) tryTimeout() time.Duration {
	if c.try > 0 {
		return c.try
	}
	return min(DefaultTryTimeout, c.ttl)
}

// withLogger sets a primitive's own logger, over the Client's. Users set
// the logger on the Client (ClientWithLogger); package leader reaches this
// through clienthook.KeyLogger, for its leases.
func withLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("dsync: nil logger")
		}
		c.logger = l
		return nil
	}
}

// withErrorHandler replaces a primitive's error handler, the Client's: the
// sweep's lock reports its failures apart from the application's.
func withErrorHandler(f func(error)) Option {
	return func(c *config) error {
		c.onError = f
		return nil
	}
}

// WithForgetAfter lets a Once forget that its function succeeded, d after
// the success. Once d and then the idle age of compaction have passed
// (ClientWithIdleAge; 30 minutes by default on MongoDB), a sweep deletes
// the done record. A Do after that runs the function again. Use it for keys
// made per slot of time ("report@2026-11-23T10:00"), whose records would
// otherwise pile up, with d longer than any Do of a slot can come late.
// Without it a done record is kept until the collections are emptied. d
// must be positive.
func WithForgetAfter(d time.Duration) Option {
	return func(c *config) error {
		if err := c.fits("WithForgetAfter", primOnce); err != nil {
			return err
		}
		if d <= 0 {
			return fmt.Errorf("dsync: WithForgetAfter(%v): must be positive", d)
		}
		c.forgetAfter = d
		return nil
	}
}

// WithReadLinger turns on an RWMutex's read linger, which is off by
// default. After the last RUnlock of the RWMutex value, its read claim is
// kept until d has passed since the claim's first RUnlock. An RLock or
// TryRLock in that time then holds again with no request to the store (see
// RWMutex). The linger is not renewed by later RUnlocks: a reader that
// never stops still ends its claim every d, so a writer that cannot be
// heard waits d at most. It pays where one process churns RLock and RUnlock
// on a key: it makes one claim per linger instead of one per RLock. It
// applies only where the process hears that a writer waits (direct hints,
// ClientWithHints, or the store's live wake-up stream); elsewhere RUnlock
// releases as without it.
//
// Turning it on changes promises of sync.RWMutex's shape (RWMutex's doc
// lists them): another value's or process's TryLock, which never
// announces, fails for up to d after every read ended; a writer whose
// process takes no hints, behind a reader that hears only hints, waits
// up to d; the store (and dsync status) shows a reader while
// none holds; and successive read holds of the value share a fencing
// token.
//
// d must lie between 0 and the Client's renew interval
// (ClientWithRenewInterval), which bounds what a claim kept costs (about one
// renewal of the lease more) and a writer's worst wait: NewRWMutex
// returns an error for a d outside, as for any option's bad input. 0 is
// the default: off, RUnlock always releases.
func WithReadLinger(d time.Duration) Option {
	return func(c *config) error {
		if err := c.fits("WithReadLinger", primRWMutex); err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("dsync: WithReadLinger(%v): must not be negative", d)
		}
		c.readLinger = d
		return nil
	}
}

// WithNamespace keeps the Mutex's key apart from plain keys. It claims the
// key in the namespace ns (stored as "dsync:NS/KEY"), which no plain key of
// the same name reaches. Keys outside a namespace may not begin with
// "dsync:".
//
// ns must not be empty, must not contain "/" (the namespace "a/b" would
// share its keys with the namespace "a": "dsync:a/b/KEY" is KEY "b/KEY"
// there), and must not be one of dsync's own: "rw", "sem" and "once"
// (the keys of RWMutexes, Semaphores and Onces), "election" (package
// leader's leases) and "sweep" (the Client's compaction lock), whose
// keys a Mutex in them would share. NewMutex returns the error, which
// names the namespace and why.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if err := c.fits("WithNamespace", primMutex); err != nil {
			return err
		}
		switch {
		case ns == "":
			return errors.New("dsync: empty namespace")
		case strings.Contains(ns, "/"):
			err := fmt.Errorf("dsync: WithNamespace(%q): a namespace may not contain \"/\", which ends it in a stored key (dsync:NS/KEY)", ns)
			if outer, _, _ := strings.Cut(ns, "/"); outer != "" {
				err = fmt.Errorf("%w: its keys would be those of the namespace %q", err, outer)
			}
			return err
		case ownNamespaces[ns] != "":
			return fmt.Errorf("dsync: WithNamespace(%q): dsync keeps %s keys there: a Mutex in it would share them", ns, ownNamespaces[ns])
		}
		c.namespace = ns
		return nil
	}
}

// Package leader puts its leases in its namespace with the option
// clienthook.Elections, and reads the store's time with
// clienthook.StoreTime, which only dsync's own packages can reach.
func init() {
	clienthook.Elections = ownNamespace(electionNamespace)
	clienthook.KeyLogger = withLogger
	clienthook.ClientParams = func(c any) clienthook.Params {
		cfg := &c.(*Client).cfg
		k := config{ttl: cfg.lease.TTL, release: cfg.release}
		return clienthook.Params{TTL: cfg.lease.TTL, RenewInterval: cfg.lease.Interval, Logger: cfg.logger,
			ReleaseTimeout: k.releaseTimeout(), OutageGrace: cfg.lease.Grace}
	}
	clienthook.OwnerOf = func(p any) string {
		switch p := p.(type) {
		case *Mutex:
			return p.owner
		case *RWMutex:
			return p.owner
		case *Semaphore:
			return p.owner
		}
		panic(fmt.Sprintf("dsync: clienthook.OwnerOf(%T)", p))
	}
	clienthook.StoreTime = func(c *Client) time.Time { return c.store.ServerTime().Earliest }
}

// ownNamespace is WithNamespace for dsync's own namespaces (see
// ownNamespaces): package leader's (clienthook.Elections) and the
// sweep's.
func ownNamespace(ns string) Option {
	return func(c *config) error {
		if err := c.fits("a namespace of dsync's own", primMutex); err != nil {
			return err
		}
		if ownNamespaces[ns] == "" {
			return fmt.Errorf("dsync: %q is not a namespace of dsync's own", ns)
		}
		c.namespace = ns
		return nil
	}
}
