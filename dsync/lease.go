package dsync

import (
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The lease is the Client's: one session, renewed by one keeper with one
// command per interval however many holds and waiting claims of its
// primitives rely on it. Its parameters are the Client's options
// (WithTTL, WithRenewInterval, WithClock), checked once, when the Client
// is made.

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
