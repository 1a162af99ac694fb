package dsync

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/dsync/internal/enginehook"
	"github.com/go-dsync/dsync/dsync/internal/lease"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// releaseTimeout bounds a release, or another write the Client sends
// in the background after its caller has moved on (an outage record):
// ClientWithReleaseTimeout, or at most DefaultReleaseTimeout, the TTL if
// shorter.
func (c *clientConfig) releaseTimeout() time.Duration {
	if c.release > 0 {
		return c.release
	}
	return min(DefaultReleaseTimeout, c.lease.TTL)
}

// A ClientOption configures a Client.
type ClientOption func(*clientConfig) error

type clientConfig struct {
	logger     *slog.Logger
	onError    func(error)   // nil: none (ClientWithErrorHandler)
	release    time.Duration // 0: min(DefaultReleaseTimeout, TTL)
	try        time.Duration // 0: min(DefaultTryTimeout, TTL)
	wakeups    bool
	hints      *hint.Config  // nil: direct hints by default (ClientWithHints)
	hintsOff   bool          // ClientWithHints("", ""): no direct hints
	poll       time.Duration // waiters' poll while wake-ups are off or down
	safetyPoll time.Duration // waiters' look when nothing woke them
	lease      lease.Params
	engine     queue.Config    // the queue engine's settings
	spanSet    bool            // the span was set (ClientWithBucketSpan): refuse another
	graceSet   bool            // the grace was set (ClientWithOutageGrace): checked against the span
	idleAge    time.Duration   // compact keys idle this long; 0: never sweep
	observer   *event.Observer // nil: none (ClientWithObserver)
	// test and engineTest hold the settings of other packages' tests
	// (hook.go), empty in a program; NewClient sets them before it reads
	// any (takeHooks).
	test       *testSettings
	engineTest enginehook.Settings
	// directFeed, if set, stands for the hint Feed over the store's feed
	// (this package's tests: hints between simulated processes).
	directFeed func(inner driver.Feed) driver.Feed
}

// Defaults of the Client's options.
const (
	// DefaultPollInterval is how often a waiter checks the claim ahead of
	// it when wake-ups are off or their stream is down.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultSafetyPoll caps how long a waiter relies on wake-ups alone.
	DefaultSafetyPoll = 15 * time.Second
	// DefaultIdleAge is how long a key must have been idle before a
	// Client's sweeps compact it (ClientWithIdleAge).
	DefaultIdleAge = 30 * time.Minute
)

// ClientWithTTL sets the length of the Client's lease. The TTL is how long a hold
// stays valid without a successful renewal, and so how long a crashed
// process blocks others. Default: DefaultTTL (15 s). It must be at least
// MinTTL (100 ms), well above the store's round trip, and at most the
// store's bucket span (5 minutes unless set otherwise: see
// ClientWithBucketSpan). A shorter TTL hands a crashed holder's keys over
// sooner and costs more renewals. Every primitive and election made on the
// Client shares it.
func ClientWithTTL(ttl time.Duration) ClientOption {
	return func(c *clientConfig) error {
		switch {
		case ttl <= 0:
			return fmt.Errorf("dsync: TTL must be positive, got %v", ttl)
		case ttl < MinTTL:
			return fmt.Errorf("dsync: TTL %v is below the minimum %v", ttl, MinTTL)
		}
		c.lease.TTL = ttl
		return nil
	}
}

// ClientWithRenewInterval sets how often the Client renews its lease. It renews
// while it has holds or waiting claims. Default: a third of the TTL, so two
// renewals can fail before the holds are lost. It must be positive and
// shorter than the TTL minus the safety margin (TTL/20).
func ClientWithRenewInterval(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: renew interval must be positive, got %v", d)
		}
		c.lease.Interval = d
		return nil
	}
}

// ClientWithOutageGrace sets how long an outage of the whole store (a
// MongoDB election, a restart) the Client's holds may ride through.
// Default: DefaultOutageGrace (30 s), shortened to fit a short bucket
// span (see below). 0 turns it off: a hold is lost for good at its local
// deadline, and a waiter judges a claim by its session's expiry alone.
//
// With a grace d, Lost() still closes at the deadline, and Err wraps
// ErrSuspended beside ErrLost; but the session is suspended, not given
// up. Once the store answers again, the session is renewed and checked
// against the store's record of up-time. If no other process could have
// found it expired (nobody could renew), it resumes with its claims, and
// a Mutex locked again (LockContext) holds again with the same token. If
// the store was up without this process (cut off alone), the hold ended,
// as without a grace. The session is given up at the deadline + d + TTL
// at the latest. A holder cut off alone, or crashed, while the store is
// up for others, is taken over about when its session expires, as
// without a grace, where other processes renew meanwhile (where none
// does, the store's record cannot tell a crash from an outage: a grace
// past its expiry); one that died during an outage, a TTL of the store's
// up-time after the store is back (or a grace past its session's expiry,
// if sooner). Give every process of a store the same grace; on a store
// that keeps no record of up-time, it changes nothing. d must be whole
// milliseconds, at most 10 minutes and at most the bucket span
// (ClientWithBucketSpan) less the TTL less 2 s.
func ClientWithOutageGrace(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		switch {
		case d < 0:
			return fmt.Errorf("dsync: outage grace must not be negative, got %v", d)
		case d > queue.MaxGrace:
			return fmt.Errorf("dsync: outage grace %v is above the maximum %v", d, queue.MaxGrace)
		case d%time.Millisecond != 0:
			return fmt.Errorf("dsync: outage grace %v is not a whole number of milliseconds", d)
		}
		c.lease.Grace, c.engine.OutageGrace, c.graceSet = d, d, true
		return nil
	}
}

// ClientWithLogger sets where the Client and its primitives log what they
// handle themselves. Store errors are logged at Warn: acquire attempts
// that Lock retries, failed renewals (the first of a run of failures; the
// others at Debug) and failed releases. A hold's loss is logged at Warn
// too, naming its cause (at Info when Close ended the hold). Default:
// slog.Default(). Pass slog.New(slog.DiscardHandler) to silence them.
func ClientWithLogger(l *slog.Logger) ClientOption {
	return func(c *clientConfig) error {
		if l == nil {
			return errors.New("dsync: nil logger")
		}
		c.logger = l
		return nil
	}
}

// ClientWithErrorHandler sets a function called with every store error
// the Client's primitives handle themselves. Those are the errors the
// logger gets (ClientWithLogger), and f is called in addition to it.
// Default: none. f must not block.
func ClientWithErrorHandler(f func(error)) ClientOption {
	return func(c *clientConfig) error {
		if f == nil {
			return errors.New("dsync: nil error handler")
		}
		c.onError = f
		return nil
	}
}

// ClientWithReleaseTimeout bounds how long an Unlock waits for its
// release. The bound includes a renewal in flight that the release must
// not race. Default: DefaultReleaseTimeout (2 s), or the TTL if shorter. A
// release that does not finish in time is reported and left undone: the
// lease expires by itself after the TTL, and other processes wait until
// then. It must be positive.
func ClientWithReleaseTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: release timeout must be positive, got %v", d)
		}
		c.release = d
		return nil
	}
}

// ClientWithTryTimeout bounds the one attempt of TryLock, TryRLock,
// TryAcquire and their Context forms. The attempt fails if the store has
// not answered within d. As the first attempt of a process, it includes
// the store's preparation. Default: DefaultTryTimeout (2 s), or the TTL if
// shorter. It must be positive.
func ClientWithTryTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: try timeout must be positive, got %v", d)
		}
		c.try = d
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

// ClientWithPollInterval sets how often a waiter checks the claim ahead of
// it. It applies while wake-ups are off or their stream is down. Default:
// DefaultPollInterval (250 ms). A Mutex that locks again right after taking
// a key over waits up to as long for the process it took over from to queue
// again (see Mutex). It must be positive.
func ClientWithPollInterval(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: poll interval must be positive, got %v", d)
		}
		c.poll = d
		return nil
	}
}

// ClientWithSafetyPoll sets how long a waiter relies on wake-ups alone.
// After that time it checks the claim ahead of it again. Default:
// DefaultSafetyPoll (15 s). It must be positive.
func ClientWithSafetyPoll(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: safety poll interval must be positive, got %v", d)
		}
		c.safetyPoll = d
		return nil
	}
}

// ClientWithIdleAge makes this Client compact keys idle for d, in the
// background. It sweeps about once per bucket span, and compacts the keys
// idle (nobody holding or waiting for them) for at least d (Compact). It
// must be at least four bucket spans (ClientWithBucketSpan); 0 turns this
// Client's sweeps off (another process may still sweep). Default:
// DefaultIdleAge (30 minutes).
func ClientWithIdleAge(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d < 0 {
			return fmt.Errorf("dsync: idle age must not be negative, got %v", d)
		}
		c.idleAge = d
		return nil
	}
}

// ClientWithBucketSpan sets the store's bucket span. Every process on a
// store must use the same span, which the first process records in the
// store. A process whose span is not the store's fails every acquire with
// an error wrapping ErrSpan, also when the store was emptied and first
// written by a process of another span while it ran. Default: the store's,
// or 5 minutes for a new store. A hold's TTL must be at most the span.
// Shorter spans cost each holder a gate insert per span and key held, and
// allow shorter idle ages (ClientWithIdleAge); the default suits every TTL
// up to 5 minutes. The span must be a whole number of milliseconds.
func ClientWithBucketSpan(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d < 4*c.engine.Margin {
			return fmt.Errorf("dsync: bucket span %v is below the minimum %v", d, 4*c.engine.Margin)
		}
		if d%time.Millisecond != 0 {
			// MongoDB's driver records the span in milliseconds: a span
			// it rounds would read back as another span, and this
			// process would fail every acquire with ErrSpan.
			return fmt.Errorf("dsync: bucket span %v is not a whole number of milliseconds", d)
		}
		c.engine.Span, c.spanSet = d, true
		return nil
	}
}

// ClientWithObserver sets the Client's observer (package event). It is
// told what the Client's locks and lease do. Default: none.
func ClientWithObserver(o event.Observer) ClientOption {
	return func(c *clientConfig) error {
		if o.Acquired == nil && o.AcquireFailed == nil && o.Released == nil && o.Lost == nil &&
			o.Waiting == nil && o.Renewed == nil && o.RenewFailed == nil && o.Dropped == nil && o.DeadlockBroken == nil && o.OutageRidden == nil {
			return errors.New("dsync: an observer with no callback")
		}
		c.observer = &o
		return nil
	}
}

// newClientConfig applies opts over the defaults, and settles the lease
// they set. It returns store as the options' hooks have it (takeHooks).
func newClientConfig(store driver.Store, opts []ClientOption) (clientConfig, driver.Store, error) {
	cfg := clientConfig{
		logger:     slog.Default(),
		wakeups:    true,
		poll:       DefaultPollInterval,
		safetyPoll: DefaultSafetyPoll,
		lease:      lease.Params{TTL: DefaultTTL, Clock: theSystemClock},
		engine:     queue.DefaultConfig(),
		idleAge:    DefaultIdleAge,
	}
	store = cfg.takeHooks(store)
	for _, opt := range opts {
		if opt == nil {
			return cfg, nil, errNilOption
		}
		if err := opt(&cfg); err != nil {
			return cfg, nil, err
		}
	}
	cfg.defaultGrace()
	if err := cfg.lease.Settle(); err != nil {
		return cfg, nil, err
	}
	return cfg, store, nil
}

// defaultGrace gives cfg the default outage grace unless one was set:
// DefaultOutageGrace, or less where the bucket span leaves less beside
// the TTL (lease.GraceFits), in whole milliseconds; none where it leaves
// nothing.
func (c *clientConfig) defaultGrace() {
	if c.graceSet {
		return
	}
	g := min(DefaultOutageGrace, c.engine.Span-c.lease.TTL-lease.GraceSlack).Truncate(time.Millisecond)
	c.lease.Grace, c.engine.OutageGrace = max(g, 0), max(g, 0)
}

// graceFits checks a grace set by ClientWithOutageGrace against a TTL and
// the store's bucket span (lease.GraceFits). The default grace is not
// checked: it was fitted to the span NewClient knew, and where a store's
// span adopted later leaves it too little, a suspended hold whose key's
// coverage lapsed does not resume (its check finds the key uncovered), so
// the default costs nothing there.
func (c *clientConfig) graceFits(ttl, span time.Duration) error {
	if !c.graceSet {
		return nil
	}
	return lease.GraceFits(c.lease.Grace, ttl, span)
}
