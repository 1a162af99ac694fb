package lease

import (
	"time"

	"github.com/go-dsync/dsync/internal/plant"
)

// The decisions of a session's deadline that a planted error changes
// (plant.MutexPastDeadline keeps holds a TTL past it): one function
// each, named by what it decides, whose body is the rule and then what
// the planted error makes of it. In every build without -tags
// dsync_planted plantedLate is a constant 0, and each is the rule alone.

// timerDelay is how long from now s's deadline timer waits (armLocked):
// until s's deadline; k.mu is held. MutexPastDeadline: a TTL longer.
func (k *Keeper[H]) timerDelay(s *Session[H]) time.Duration {
	return k.deadlineLocked(s).Sub(k.p.Clock.Now()) + plantedLate(k.p.TTL)
}

// judgedAt is the time, on the leases' scale, at which a session's
// deadline is judged at now (reliedLocked, ExpireIfDue): now's.
// MutexPastDeadline judges it a TTL earlier, so that a hold stays valid
// a TTL past its deadline.
func (k *Keeper[H]) judgedAt(now time.Time) time.Duration {
	return k.mono(now) - plantedLate(k.p.TTL)
}

// plantedLate is how late a session's deadline is judged: a TTL with
// MutexPastDeadline planted, else 0.
func plantedLate(ttl time.Duration) time.Duration {
	if plant.On && plant.Is(plant.MutexPastDeadline) {
		return ttl
	}
	return 0
}
