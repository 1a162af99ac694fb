package dsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/xid"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/dsync/internal/keydir"
	"github.com/go-dsync/dsync/dsync/internal/wake"
	"github.com/go-dsync/dsync/internal/chain"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/observe"
)

// A Client is one process's connection to a store for coordination: the
// front door of dsync. It owns the process's lease (one session, of the
// Client's TTL, renewed with one command per renew interval however many
// locks the process holds or waits for, and however many elections it
// runs), the protocol's state, and the goroutines that keep them: every
// Mutex, RWMutex, Semaphore, Once and leader.Election made on it shares
// them. Close ends its sessions and waits for its goroutines.
//
// A Client is made by NewClient over a driver's store
// (dsyncmongo.NewStore for MongoDB, memory.New for tests). It is safe for
// concurrent use.
type Client struct {
	store driver.Store
	// roles are the store's (driver.Roles): those of the store the
	// Client calls (a test's wrapper, if any); its feed, key checks and
	// hints' records are taken from the store given to NewClient.
	roles driver.Roles
	feed  driver.Feed       // nil: the store carries no wake-ups
	keys  driver.KeyChecker // nil: every key but "" is valid
	eng   *chain.Engine
	cfg   clientConfig
	// origin is the reading of the monotonic clock that the engine's and
	// the wake-ups' local times count from.
	origin time.Time
	resend *chain.Resender
	wake   *wake.Hub
	dir    *keydir.Recorder // records the keys claimed in the store's directory

	// keeper renews the lease: one per Client (keeper.go).
	keeper *keeper

	mu sync.Mutex
	// claims are the claims made through this Client and not yet ended,
	// by nonce, with whether each holds: Close ends them.
	claims map[string]liveClaim
	closed bool
	// renewFailed: the last renewal of a session failed (the store may
	// be gone): Close does not wait for the directory's puts.
	renewFailed atomic.Bool
	running     sync.WaitGroup // keepers' renewal goroutines and the sweeper
	// background: the ends of lingering read claims under way
	// (rwlinger.go), which Close waits for.
	background sync.WaitGroup

	// events calls the observer (observer.go); nil without one. waiting
	// is the count of callers waiting for a hold, guarded by waitMu.
	events  *observe.Queue
	waitMu  sync.Mutex
	waiting int

	// agreed: the engine's bucket span is settled with the store's
	// (agree), and the sweeper runs; set while agreeing's token is held,
	// and read without it too (readsByWriteClock). agreeing holds a token
	// while a call settles it: a channel, so that a caller waiting for
	// another's settling gives up when its context ends (a try stays
	// bounded).
	agreeing chan struct{}
	agreed   atomic.Bool
	sweep    sweeper
}

// liveClaim is a claim made through a Client that has not ended.
type liveClaim struct {
	c    chain.Ref
	held bool
	// lost: its hold was lost (the session's lease ran out, or the store
	// said the session is gone), which ended the claim in the store's
	// eyes: Close sends it no end.
	lost bool
}

// A ClientOption configures a Client.
type ClientOption func(*clientConfig) error

type clientConfig struct {
	logger     *slog.Logger
	wakeups    bool
	hints      *hint.Config  // nil: direct hints by default (ClientWithHints)
	hintsOff   bool          // ClientWithHints("", ""): no direct hints
	poll       time.Duration // waiters' poll while wake-ups are off or down
	safetyPoll time.Duration // waiters' look when nothing woke them
	// relockWindow: how long after a takeover a Mutex that locks again
	// waits for the owner it took over from (relock.go); 0: poll. Tests
	// only, as are bug and wrapStore.
	relockWindow time.Duration
	lease        lease
	chain        chain.Config
	spanSet      bool          // the span was set (ClientWithBucketSpan): refuse another
	idleAge      time.Duration // compact keys idle this long; 0: never sweep
	observer     *Observer     // nil: none (ClientWithObserver)
	onHints      func(*hint.Feed)
	bug          chain.Bug
	wrapStore    func(driver.Store) driver.Store
	raw          func(clienthook.Raw) // given the Client's protocol calls
	judgedOver   func()               // the keeper's judgedOver (tests)
	// directFeed, if set, stands for the hint Feed over the store's feed
	// (tests: hints between simulated processes).
	directFeed func(inner driver.Feed) driver.Feed
}

// Defaults of the Client's options.
const (
	// DefaultPollInterval is how often a waiter checks the claim ahead of
	// it when wake-ups are off or their stream is down.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultSafetyPoll caps how long a waiter relies on wake-ups alone.
	DefaultSafetyPoll = 15 * time.Second
)

// ClientWithLogger sets where the Client reports what it handles itself:
// ends sent again, the wake-up stream falling back to polling. Default:
// slog.Default().
func ClientWithLogger(l *slog.Logger) ClientOption {
	return func(c *clientConfig) error {
		if l == nil {
			return errors.New("dsync: nil logger")
		}
		c.logger = l
		return nil
	}
}

// ClientWithWakeups turns wake-ups through the store's feed on or off.
// Default: on, where the store has a feed. Off, waiters poll (every
// ClientWithPollInterval), and direct hints, where they are on
// (ClientWithHints; by default where the store is reached over
// loopback), wake them sooner.
func ClientWithWakeups(on bool) ClientOption {
	return func(c *clientConfig) error {
		c.wakeups = on
		return nil
	}
}

// ClientWithPollInterval sets how often a waiter checks the claim ahead
// of it while wake-ups are off or their stream is down. Default:
// DefaultPollInterval (250 ms). A Mutex that locks again right after
// taking a key over waits up to as long for the process it took over from
// to queue again (see Mutex). It must be positive.
func ClientWithPollInterval(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: poll interval must be positive, got %v", d)
		}
		c.poll = d
		return nil
	}
}

// ClientWithSafetyPoll sets how long a waiter relies on wake-ups alone
// before it checks the claim ahead of it again. Default: DefaultSafetyPoll
// (15 s). It must be positive.
func ClientWithSafetyPoll(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: safety poll interval must be positive, got %v", d)
		}
		c.safetyPoll = d
		return nil
	}
}

// NewClient returns a Client over store, a driver's (dsyncmongo.NewStore,
// memory.New). It does no I/O: the store is prepared by the first call
// that needs it. The options set the lease (WithTTL, WithRenewInterval,
// WithClock) and how the Client waits, sweeps and reports (the
// ClientWith options).
func NewClient(store driver.Store, opts ...ClientOption) (*Client, error) {
	if store == nil {
		return nil, errors.New("dsync: nil store")
	}
	cfg := clientConfig{
		logger:     slog.Default(),
		wakeups:    true,
		poll:       DefaultPollInterval,
		safetyPoll: DefaultSafetyPoll,
		lease:      lease{ttl: DefaultTTL, clock: SystemClock()},
		chain:      chain.DefaultConfig(),
		idleAge:    DefaultIdleAge,
	}
	store = cfg.takeHooks(store)
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("dsync: nil option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if err := cfg.lease.settle(); err != nil {
		return nil, err
	}
	c := &Client{store: store, cfg: cfg, origin: SystemClock().Now(), claims: make(map[string]liveClaim), agreeing: make(chan struct{}, 1)}
	own := store.Roles()
	if cfg.wakeups {
		c.feed = own.Feed
	}
	inner := c.feed
	if cfg.directFeed != nil {
		c.feed = cfg.directFeed(c.feed)
	} else if cfg.hints != nil {
		hf, err := hint.New(store, c.feed, cfg.hintConfig(cfg.logger))
		if err != nil {
			return nil, fmt.Errorf("dsync: %w", err)
		}
		c.feed = hf
	}
	c.keys = own.KeyCheck
	if cfg.wrapStore != nil {
		c.store = cfg.wrapStore(store)
	}
	c.roles = c.store.Roles()
	cfg.chain.Host, _ = os.Hostname()
	cfg.chain.PID = os.Getpid()
	eng, err := chain.New(c.store, engineClock{c}, cfg.chain)
	if err != nil {
		return nil, fmt.Errorf("dsync: %w", err)
	}
	if span := eng.Span(); cfg.lease.ttl > span {
		return nil, ttlSpanError(cfg.lease.ttl, span)
	}
	eng.SetBug(cfg.bug)
	plantEngine(eng)
	c.eng = eng
	c.keeper = newKeeper(c, cfg.lease)
	c.keeper.judgedOver = cfg.judgedOver
	c.resend = chain.NewResender(eng, func(pending int, err error) {
		c.cfg.logger.Debug("dsync: ends of unknown outcome not yet confirmed", "pending", pending, "err", err)
	})
	c.dir = keydir.New(c.roles.Directory, c.mono, cfg.logger)
	c.newEvents()
	direct := cfg.hints != nil || cfg.directFeed != nil
	env := wake.Env{
		Mono: c.mono, Now: c.store.ServerTime, SessionAlive: eng.SessionAlive, Confirmed: eng.ConfirmedExpiry,
		Logger: cfg.logger, Poll: cfg.poll, SafetyPoll: cfg.safetyPoll, TTL: cfg.lease.ttl,
		Direct: direct, Peers: wake.PeersOf(store, direct),
	}
	if !direct && !cfg.hintsOff {
		env.Settle = loopbackHints(store, inner, cfg)
	}
	c.wake = wake.New(env, c.feed, xid.New().String())
	eng.OnLanded(func(d chain.Doc) {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
		defer cancel()
		c.wake.Ended(ctx, d.Key, d.Epoch)
	})
	if cfg.raw != nil {
		cfg.raw(raw{c})
	}
	if hf, ok := c.feed.(*hint.Feed); ok && cfg.onHints != nil {
		cfg.onHints(hf)
	}
	return c, nil
}

// ttlSpanError says that the lease is longer than the store's bucket
// span allows: a hold must end within one span of the store's time (see
// ClientWithBucketSpan). It says what to change, not why.
func ttlSpanError(ttl, span time.Duration) error {
	return fmt.Errorf("dsync: TTL %v is longer than this store allows: use a TTL of at most %v (the store's bucket span; a program can give a new store a longer one, with ClientWithBucketSpan)", ttl, span)
}

// engineClock is the engine's clock: the store's time, and this
// process's monotonic time (suspends counted) since the Client began.
type engineClock struct{ c *Client }

func (e engineClock) ServerNow() chain.Interval { return e.c.store.ServerTime() }
func (e engineClock) Mono() time.Duration       { return e.c.mono() }

func (c *Client) mono() time.Duration { return SystemClock().Now().Sub(c.origin) }

// Close ends every claim made through c — holds are lost first (their
// Lost() closes), then released; waiting claims are withdrawn — so that
// other processes go on at once, not after a TTL; stops c's goroutines
// and waits for them, and closes its store. Calls made afterwards fail
// with ErrClosed. Close is idempotent.
//
// Close is bounded when the store cannot be reached: all the requests it
// sends (the ends, ends of unknown outcome sent again, keys not yet
// recorded in the store's directory) share DefaultReleaseTimeout, and
// whatever they could not end in that time, the lease ends: other
// processes take those keys once the session expires, a TTL at most
// after its last renewal. Holds already lost (Lost closed) are not ended
// again: their lease has run out, so they need no request. Nor does
// Close wait for keys being recorded in the directory when the last
// renewal failed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.sweep.stop()
	// Taken before the keepers retire their sessions, which loses every
	// hold: the holds lost before Close are the lease's to end.
	claims := c.claims
	c.claims = make(map[string]liveClaim)
	c.mu.Unlock()
	c.keeper.close()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	for _, lc := range claims {
		if lc.lost {
			continue
		}
		wake := func() { c.wake.Ended(ctx, lc.c.Key, lc.c.Epoch) }
		if err := c.eng.EndThen(ctx, chain.Resume(lc.c), lc.held, wake); err != nil {
			wake() // this process's waiters look again
		}
	}
	c.background.Wait() // their ends were taken out of claims, or fail with ErrClosed
	c.resend.Close()    // stops a resend under way: it would wait on its own
	if c.eng.Pending() > 0 && ctx.Err() == nil {
		_, _ = c.eng.Flush(ctx)
	}
	c.running.Wait()
	c.wake.Close()
	if c.renewFailed.Load() {
		cancel() // keys are recorded again at their next claim
	}
	c.dir.Close(ctx)
	c.events.Close() // after everything that reports
	return c.store.Close()
}

// inBackground runs f in a goroutine that Close waits for, unless c is
// closed (then Close ends whatever f would).
func (c *Client) inBackground(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		f()
	}()
}

// closeTimeout bounds the requests Close sends, all together.
const closeTimeout = DefaultReleaseTimeout

// prepare readies the store before a request: the store's Prepare (on
// MongoDB it creates the collections and indexes, the first time), then
// agree.
func (c *Client) prepare(ctx context.Context) error {
	if c.isClosed() {
		return ErrClosed
	}
	if err := c.store.Prepare(ctx); err != nil {
		return err
	}
	return c.agree(ctx)
}

// isClosed reports whether Close was called.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// agree settles, once, the bucket span this Client's engine uses with the
// store's (chain.Engine.Agree), and starts the sweeper.
func (c *Client) agree(ctx context.Context) error {
	select {
	case c.agreeing <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-c.agreeing }()
	if c.agreed.Load() {
		return nil
	}
	if err := c.eng.Agree(ctx, c.cfg.spanSet); err != nil {
		if e := ended(ctx, "dsync: agree on the bucket span", err); e != nil {
			return e
		}
		return spanError(c.cfg.spanSet, fmt.Errorf("dsync: %w", err))
	}
	c.agreed.Store(true)
	c.startSweeper()
	return nil
}

// checkKey refuses keys the store cannot hold, before any I/O.
func (c *Client) checkKey(key string) error {
	if c.keys != nil {
		return c.keys.CheckKey(key)
	}
	if key == "" {
		return ErrEmptyKey
	}
	return nil
}

// TTL returns the length of the Client's lease (WithTTL).
func (c *Client) TTL() time.Duration { return c.cfg.lease.ttl }

// RenewInterval returns how often the Client renews its lease
// (WithRenewInterval).
func (c *Client) RenewInterval() time.Duration { return c.cfg.lease.interval }

// Logger returns the logger the Client reports to (ClientWithLogger,
// else slog.Default()); its primitives use it unless given their own
// (WithLogger).
func (c *Client) Logger() *slog.Logger { return c.cfg.logger }
