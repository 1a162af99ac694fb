package dsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/xid"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/dsync/internal/ctxerr"
	"github.com/go-dsync/dsync/dsync/internal/keydir"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/sweeper"
	"github.com/go-dsync/dsync/dsync/internal/wake"
	"github.com/go-dsync/dsync/internal/observe"
)

// A Client is one process's connection to a store for coordination. It is
// the front door of dsync. It owns the process's lease (one session, of the
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
	eng   *queue.Engine
	cfg   clientConfig
	// origin is the reading of the monotonic clock that the engine's and
	// the wake-ups' local times count from.
	origin time.Time
	resend *queue.Resender
	wake   *wake.Hub
	dir    *keydir.Recorder // records the keys claimed in the store's directory

	// keeper renews the lease: one per Client (keeper.go, internal/lease).
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

	// events calls the observer (observe); nil without one. waiting
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
	sweep    sweeper.Sweeper
}

// liveClaim is a claim made through a Client that has not ended.
type liveClaim struct {
	c    queue.Ref
	held bool
	// lost: its hold was lost (the session's lease ran out, or the store
	// said the session is gone), which ended the claim in the store's
	// eyes: Close sends it no end.
	lost bool
}

// NewClient returns a Client over store, a driver's (dsyncmongo.NewStore,
// memory.New). It does no I/O: the store is prepared by the first call
// that needs it. The options set the lease (ClientWithTTL,
// ClientWithRenewInterval), how the Client waits, sweeps and reports, and
// what its primitives share: the logger, the error handler, the release
// and try timeouts.
func NewClient(store driver.Store, opts ...ClientOption) (*Client, error) {
	if store == nil {
		return nil, errors.New("dsync: nil store")
	}
	cfg, store, err := newClientConfig(store, opts)
	if err != nil {
		return nil, err
	}
	c := &Client{store: store, cfg: cfg, origin: cfg.lease.Clock.Now(), claims: make(map[string]liveClaim), agreeing: make(chan struct{}, 1)}
	own := store.Roles()
	inner, err := c.takeFeed(store, own.Feed)
	if err != nil {
		return nil, err
	}
	c.keys = own.KeyCheck
	if cfg.test.wrapStore != nil {
		c.store = cfg.test.wrapStore(store)
	}
	c.roles = c.store.Roles()
	if err := c.startEngine(); err != nil {
		return nil, err
	}
	c.dir = keydir.New(c.roles.Directory, c.mono, cfg.logger)
	c.newEvents()
	c.startWake(store, inner)
	if cfg.engineTest.Raw != nil {
		cfg.engineTest.Raw(raw{c})
	}
	if hf, ok := c.feed.(*hint.Feed); ok && cfg.test.hints != nil {
		cfg.test.hints(hf)
	}
	return c, nil
}

// takeFeed sets the feed c's waiters are woken through: the store's own,
// own (if wake-ups are on), under direct hints where they are on. It
// returns the store's feed as c takes it (nil with wake-ups off), which
// hints found later on loopback go over.
func (c *Client) takeFeed(store driver.Store, own driver.Feed) (inner driver.Feed, err error) {
	cfg := c.cfg
	if cfg.wakeups {
		c.feed = own
	}
	inner = c.feed
	if cfg.directFeed != nil {
		c.feed = cfg.directFeed(c.feed)
	} else if cfg.hints != nil {
		hf, err := hint.New(store, c.feed, cfg.hintConfig(cfg.logger))
		if err != nil {
			return nil, fmt.Errorf("dsync: %w", err)
		}
		c.feed = hf
	}
	return inner, nil
}

// startEngine makes c's queue engine over its (wrapped) store, with the
// keeper of its lease and the resender of ends of unknown outcome. It
// refuses a TTL longer than the engine's bucket span: a hold must end
// within one span of the store's time.
func (c *Client) startEngine() error {
	cfg := c.cfg
	cfg.engine.Host, _ = os.Hostname()
	cfg.engine.PID = os.Getpid()
	eng, err := queue.New(c.store, engineClock{c}, cfg.engine)
	if err != nil {
		return fmt.Errorf("dsync: %w", err)
	}
	if span := eng.Span(); cfg.lease.TTL > span {
		return ttlSpanError(cfg.lease.TTL, span)
	} else if err := cfg.graceFits(cfg.lease.TTL, span); err != nil {
		return err
	}
	if c.roles.Uptime == nil {
		cfg.lease.Grace = 0 // the engine's counts as zero too
	}
	eng.SetBug(cfg.engineTest.Bug)
	plantEngine(eng)
	c.eng = eng
	c.keeper = newKeeper(c, cfg.lease)
	if cfg.lease.Grace > 0 {
		eng.SetStamp(c.keeper.Stamp) // waiters' stamps past an expiry (queue's judge_outage.go)
	}
	c.keeper.SetJudgedOver(cfg.test.judgedOver)
	c.resend = queue.NewResender(eng, func(pending int, err error) {
		c.cfg.logger.Debug("dsync: ends of unknown outcome not yet confirmed", "pending", pending, "err", err)
	})
	return nil
}

// startWake makes c's wake-ups over its feed, and has every end the
// engine learns landed wake the waiters behind it. Without direct hints
// set by the options, it checks whether the store is reached over
// loopback (then hints on loopback wake waiters sooner); inner is the
// store's own feed, as takeFeed returned it.
func (c *Client) startWake(store driver.Store, inner driver.Feed) {
	cfg := c.cfg
	direct := cfg.hints != nil || cfg.directFeed != nil
	env := wake.Env{
		Mono: c.mono, Now: c.store.ServerTime, SessionAlive: c.eng.SessionAlive, Confirmed: c.eng.ConfirmedExpiry,
		Logger: cfg.logger, Poll: cfg.poll, SafetyPoll: cfg.safetyPoll, TTL: cfg.lease.TTL,
		Direct: direct, Peers: wake.PeersOf(store, direct),
	}
	if !direct && !cfg.hintsOff {
		env.Settle = loopbackHints(store, inner, cfg)
	}
	if env.Settle == nil {
		cfg.test.settledNow() // nothing to ask
	}
	c.wake = wake.New(env, c.feed, xid.New().String())
	c.eng.OnLanded(func(d queue.Doc) {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultReleaseTimeout)
		defer cancel()
		c.wake.Ended(ctx, d.Key, d.Epoch)
	})
}

// newEvents starts the queue that calls c's observer, if it has one.
func (c *Client) newEvents() {
	if o := c.cfg.observer; o != nil {
		c.events = observe.New(o.Dropped)
	}
}

// observe queues f's call of the Client's observer, if it has one.
func (c *Client) observe(f func(o *event.Observer)) {
	if c.cfg.observer == nil {
		return
	}
	o := c.cfg.observer
	c.events.Send(func() { f(o) })
}

// waitingDelta counts a caller of c starting (+1) or ending (-1) a wait
// for a hold, and tells the observer the new count. The count and its
// sending are under one lock, so the observer sees the counts in order.
func (c *Client) waitingDelta(d int) {
	if c.cfg.observer == nil {
		return
	}
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	c.waiting += d
	n := c.waiting
	c.observe(func(o *event.Observer) {
		if o.Waiting != nil {
			o.Waiting(n)
		}
	})
}

// engineClock is the engine's clock: the store's time, and this
// process's monotonic time (suspends counted) since the Client began,
// read from the lease's clock: a suspension (Engine.SuspendOn) compares
// times of both, which must count the same elapsed time.
type engineClock struct{ c *Client }

func (e engineClock) ServerNow() queue.Interval { return e.c.store.ServerTime() }
func (e engineClock) Mono() time.Duration       { return e.c.mono() }

func (c *Client) mono() time.Duration { return c.cfg.lease.Clock.Now().Sub(c.origin) }

// Close ends every claim made through c, stops its goroutines and closes
// its store. Holds are lost first (their Lost() closes), then released;
// waiting claims are withdrawn. So other processes go on at once, not after
// a TTL. Close waits for c's goroutines before it returns. Calls made
// afterwards fail with ErrClosed. Close is idempotent.
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
	c.sweep.Stop()
	// Taken before the keepers retire their sessions, which loses every
	// hold: the holds lost before Close are the lease's to end.
	claims := c.claims
	c.claims = make(map[string]liveClaim)
	c.mu.Unlock()
	c.wake.StopSettling() // hints for a Client that closes: none
	c.keeper.Close(fmt.Errorf("%w: %w", ErrLost, ErrClosed))
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	for _, lc := range claims {
		if lc.lost {
			continue
		}
		wake := func() { c.wake.Ended(ctx, lc.c.Key, lc.c.Epoch) }
		if err := c.eng.EndThen(ctx, queue.Resume(lc.c), lc.held, wake); err != nil {
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
// store's (queue.Engine.Agree), and starts the sweeper.
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
		if e := ctxerr.EndedBy(ctx, "dsync: agree on the bucket span", err); e != nil {
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
