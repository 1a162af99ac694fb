package dsync

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The lease is the Client's: one session, renewed by one keeper with one
// command per interval however many holds and waiting claims of its
// primitives rely on it. Its parameters are the Client's options, checked
// once, when the Client is made.

// lease is a Client's lease parameters.
type lease struct {
	ttl      time.Duration
	interval time.Duration // how often the session is renewed
	// margin is how much earlier than the store's expiry a holder stops
	// trusting its hold: driver.Margin of the TTL, which says what it
	// covers.
	margin time.Duration
	clock  Clock
}

// settle fills the defaults that depend on the TTL and checks the
// interval against it.
func (l *lease) settle() error {
	l.margin = driver.Margin(l.ttl)
	if l.interval == 0 {
		l.interval = l.ttl / 3
	}
	if l.interval >= l.ttl-l.margin {
		return fmt.Errorf("dsync: renew interval %v must be shorter than the TTL %v minus its safety margin %v",
			l.interval, l.ttl, l.margin)
	}
	return nil
}

// WithTTL sets the length of the Client's lease: how long a hold stays
// valid without a successful renewal, and so how long a crashed process
// blocks others. Default: DefaultTTL (15 s). It must be at least MinTTL
// (100 ms), well above the store's round trip, and at most the store's
// bucket span (5 minutes unless set otherwise: see ClientWithBucketSpan).
// A shorter TTL hands a crashed holder's keys over sooner and costs more
// renewals. Every primitive and election made on the Client shares it.
func WithTTL(ttl time.Duration) ClientOption {
	return func(c *clientConfig) error {
		switch {
		case ttl <= 0:
			return fmt.Errorf("dsync: TTL must be positive, got %v", ttl)
		case ttl < MinTTL:
			return fmt.Errorf("dsync: TTL %v is below the minimum %v", ttl, MinTTL)
		}
		c.lease.ttl = ttl
		return nil
	}
}

// WithRenewInterval sets how often the Client renews its lease while it
// has holds or waiting claims. Default: a third of the TTL, so two
// renewals can fail before the holds are lost. It must be positive and
// shorter than the TTL minus the safety margin (TTL/20).
func WithRenewInterval(d time.Duration) ClientOption {
	return func(c *clientConfig) error {
		if d <= 0 {
			return fmt.Errorf("dsync: renew interval must be positive, got %v", d)
		}
		c.lease.interval = d
		return nil
	}
}

// WithClock sets the time source of the Client's lease and of its
// primitives' waits, for tests. Default: SystemClock().
func WithClock(clock Clock) ClientOption {
	return func(c *clientConfig) error {
		if clock == nil {
			return errors.New("dsync: nil clock")
		}
		c.lease.clock = clock
		return nil
	}
}
