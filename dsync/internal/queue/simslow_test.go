package queue_test

import (
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// Slow weighted waiters. A Semaphore's waiter for several units looks
// again only when the ends it heard of can make room, or at its poll
// (grant.go: Shortfall): it may not look for a long while, as claims it
// passed live end, a claim above them holds with every lower claim ended,
// the key's floor rises past them and a release prunes them with their
// markers. Its next look then finds passed claims below the floor of the
// gate that covers it, which it drops unread (walkfloor.go: dropBelowFloor),
// keeping the floor's own claim, which may still hold. On some seeds the
// weighted key's waiters look only every 1.5 to 3 s (a bucket is 1 s),
// and its holds are often long, so that those looks come.
//
// The draws come from a stream of their own, so that the other seeds run
// exactly as they did before.

// simSlow draws the looks and holds of a seed's slow weighted waiters.
type simSlow struct {
	rng *rand.Rand // nil: waiters poll every simPoll
}

func newSimSlow(seed int64) simSlow {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x510e))
	if rng.IntN(4) != 0 {
		return simSlow{}
	}
	return simSlow{rng: rng}
}

// on reports whether terms' waiters are slow on this seed.
func (w simSlow) on(terms queue.Terms) bool {
	return w.rng != nil && terms.Mode == queue.Weighted
}

// wait returns how long a slow waiter waits before it looks again.
func (w simSlow) wait() time.Duration {
	return 1500*time.Millisecond + time.Duration(w.rng.Int64N(int64(1500*time.Millisecond)))
}

// patience is how long a slow waiter waits before it gives its claim up.
func (w simSlow) patience() time.Duration {
	return 4*time.Second + time.Duration(w.rng.Int64N(int64(4*time.Second)))
}

// hold returns how long a slow seed's weighted claim holds: often long,
// across gate refreshes, so that a claim above it can come to be the
// floor while a waiter above holds still.
func (w simSlow) hold(d time.Duration) time.Duration {
	if w.rng.IntN(3) == 0 {
		return 1500*time.Millisecond + time.Duration(w.rng.Int64N(int64(2500*time.Millisecond)))
	}
	return d
}
