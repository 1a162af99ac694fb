// Package lease keeps a dsync Client's lease: one session that every hold
// and waiting claim of the Client's primitives shares, renewed by one
// call per renew interval however many rely on it.
//
// Its contract, to the Client that makes one Keeper:
//
//   - A hold joined to a session (Keeper.Join) is valid until the
//     session's local deadline: the send time, on the Params' clock, of
//     the session's last confirmed open or renewal plus the TTL minus the
//     margin (dsync/internal/queue's Lease rules). A reply that comes at or
//     after the deadline in force does not count.
//   - When the deadline passes, when the store says it no longer knows
//     the session, when a revocation of it is read, or on Close, the
//     session is retired for good, in one step under the Keeper's lock:
//     its holds are lost (Hold.MarkLost), its waiters' context
//     (Session.Context) is cancelled with the reason, and the next Enter
//     opens a new session. The loss is then told (Hold.TellLost) under
//     no lock.
//   - With an outage grace (Params.Grace > 0), when the deadline passes
//     the session is suspended instead, unless it is retired for good
//     first (the store forgot it, a revocation, Close): its holds are lost
//     then, as at a retirement (the reason wraps Errors.Suspended too),
//     but their claims are left to the engine's suspension (Env.Suspend),
//     the session is kept, no hold joins it and Enter waits for its
//     verdict. The Keeper probes the store with a read every quarter
//     renew interval, renews only once a probe replied, and after a
//     renewal confirmed asks the suspension's check: resumed, the session
//     is relied on again (its claims kept, its lost holds kept until a
//     new hold takes each claim over or its owner lets it go:
//     Env.Resumed, retake.go); dead, or at the deadline plus Grace plus the
//     TTL, it is retired, and the suspension's claims are marked dead.
//     Without a grace, everything is as above.
//   - A renewal extends the lease no further than the earliest coverage
//     of the keys held (Env.CoverEnd); the coverage is extended beside
//     the renewals (Env.Refresh), and a hold whose key's segment lapsed
//     is lost, and its claim handed to Env.Lapsed to end a margin later
//     (its session lives on, and would keep the claim ahead of every
//     waiter of its key).
//   - The renewal goroutine runs only while the session has holds or
//     waiters; every goroutine the Keeper starts runs through Env.Go, or
//     (a renewal under way) is waited for by one that does, so that the
//     Client can wait for them on Close.
//
// The Keeper knows holds only through the Hold interface, and the store
// only through Env's functions: it writes nothing itself.
package lease

import (
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// Clock is the time source of the lease: a dsync.Client's clock, whose
// doc (dsync's clock.go) says what it must count.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Params are a Client's lease parameters: its options (ClientWithTTL,
// ClientWithRenewInterval, and a test's clock), checked once, when the Client is made
// (Settle).
type Params struct {
	TTL      time.Duration
	Interval time.Duration // how often the session is renewed
	// Margin is how much earlier than the store's expiry a holder stops
	// trusting its hold: driver.Margin of the TTL, which says what it
	// covers.
	Margin time.Duration
	// Grace is the outage grace (zero: none): with one, a session whose
	// deadline passes is suspended rather than retired, and resumed if
	// its check allows, or retired by Grace + TTL after that deadline
	// (suspend.go). It must be the engine's (queue.Config.OutageGrace,
	// zero where the store keeps no record of up-time).
	Grace time.Duration
	Clock Clock
}

// Settle fills the defaults that depend on the TTL and checks the
// interval against it.
func (p *Params) Settle() error {
	p.Margin = driver.Margin(p.TTL)
	if p.Interval == 0 {
		p.Interval = p.TTL / 3
	}
	if p.Grace < 0 || p.Grace > queue.MaxGrace {
		return fmt.Errorf("dsync: outage grace %v must be in [0, %v]", p.Grace, queue.MaxGrace)
	}
	if p.Interval >= p.TTL-p.Margin {
		return fmt.Errorf("dsync: renew interval %v must be shorter than the TTL %v minus its safety margin %v",
			p.Interval, p.TTL, p.Margin)
	}
	return nil
}
