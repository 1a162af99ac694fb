package dsync

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/internal/chain"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// A ClientOption configures a Client.
type ClientOption func(*clientConfig) error

type clientConfig struct {
	logger     *slog.Logger
	wakeups    bool
	hints      *hint.Config  // nil: direct hints by default (ClientWithHints)
	hintsOff   bool          // ClientWithHints("", ""): no direct hints
	poll       time.Duration // waiters' poll while wake-ups are off or down
	safetyPoll time.Duration // waiters' look when nothing woke them
	lease      lease
	chain      chain.Config
	spanSet    bool          // the span was set (ClientWithBucketSpan): refuse another
	idleAge    time.Duration // compact keys idle this long; 0: never sweep
	observer   *Observer     // nil: none (ClientWithObserver)
	// test holds the settings of other packages' tests (hook.go), empty
	// in a program; NewClient sets it before it reads any (takeHooks).
	test *clienthook.Settings
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

// newClientConfig applies opts over the defaults, and settles the lease
// they set. It returns store as the options' hooks have it (takeHooks).
func newClientConfig(store driver.Store, opts []ClientOption) (clientConfig, driver.Store, error) {
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
			return cfg, nil, errors.New("dsync: nil option")
		}
		if err := opt(&cfg); err != nil {
			return cfg, nil, err
		}
	}
	if err := cfg.lease.settle(); err != nil {
		return cfg, nil, err
	}
	return cfg, store, nil
}
