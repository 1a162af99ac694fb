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
	"github.com/go-dsync/dsync/internal/chain"
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

	// eventsSuffix names the capped collection of wake-up events after
	// the lock collection: "dsync_locks_events" by default.
	eventsSuffix = "_events"
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

	// chain holds the protocol's timing constants (see package
	// internal/chain). Only tests change them.
	chain chain.Config
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
		chain:      chain.DefaultConfig(),
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

// WithPollInterval sets how often a waiter checks the claim ahead of it
// in the queue when wake-up events are off (WithWakeups) or their stream
// is down. Default: DefaultPollInterval (250 ms). A waiter also checks when
// that claim's session can have expired, whichever comes first. It must
// be positive.
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
// If the store has no capped collections or tailable cursors (DocumentDB,
// Atlas serverless), or the stream fails (cursor killed, server
// restarted), waiters fall back to polling (WithPollInterval), with a
// logged notice, while the backend keeps trying to reopen the stream.
// Off, waiters poll, and no events collection is used.
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
// The event cursor's getMore commands wait up to as long. It must be
// positive.
func WithSafetyPoll(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("dsyncmongo: safety poll interval must be positive, got %v", d)
		}
		c.safetyPoll = d
		return nil
	}
}
