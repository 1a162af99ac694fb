package hint

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The guard: what a hint that passed its MAC must still pass before it
// is acted upon. A hint sent too long ago (or too far ahead) is dropped,
// so one recorded on the network cannot be played again later; one
// already taken (the same sender and seq) is dropped, so one played again
// soon after is not taken twice; and past a rate, hints are dropped, so
// that no flood of hints, forged under a stolen key or valid, makes this
// process look at the store more than a bounded number of times a
// second.

const (
	// maxAge is how far a hint's sent time may lie from the receiver's
	// estimate of the store's time (both estimates carry their error).
	maxAge = 10 * time.Second
	// maxSeen bounds the hints remembered against replays; past it, a hint
	// is dropped until those older than maxAge are forgotten.
	maxSeen = 1 << 16
)

type seenID struct {
	from string
	seq  uint64
}

// guard decides which authenticated hints are acted upon. It is safe for
// concurrent use.
type guard struct {
	now  func() driver.Interval // the store's time
	mono func() time.Duration   // local monotonic time
	rate float64                // hints taken per second, at most, on average
	cap  float64                // and at once (the bucket's size)

	refused, taken atomic.Uint64 // what admit decided (Stats)

	mu     sync.Mutex
	seen   map[seenID]time.Time // sent times of the hints taken lately
	tokens float64
	filled time.Duration // when tokens was last filled (mono)
}

func newGuard(now func() driver.Interval, mono func() time.Duration, rate float64, burst int) *guard {
	return &guard{now: now, mono: mono, rate: rate, cap: float64(burst), tokens: float64(burst), filled: mono(), seen: make(map[seenID]time.Time)}
}

// admit reports whether m is acted upon, and takes a token if so.
func (g *guard) admit(m msg) bool {
	if !g.check(m) {
		g.refused.Add(1)
		return false
	}
	g.taken.Add(1)
	return true
}

// check is admit, uncounted.
func (g *guard) check(m msg) bool {
	now := g.now()
	if m.sent.Before(now.Earliest.Add(-maxAge)) || m.sent.After(now.Latest.Add(maxAge)) {
		return false
	}
	id := seenID{m.from, m.seq}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.seen[id]; dup {
		return false
	}
	if len(g.seen) >= maxSeen {
		for k, sent := range g.seen {
			if sent.Before(now.Earliest.Add(-maxAge)) {
				delete(g.seen, k)
			}
		}
		if len(g.seen) >= maxSeen {
			return false
		}
	}
	mono := g.mono()
	g.tokens = min(g.cap, g.tokens+g.rate*(mono-g.filled).Seconds())
	g.filled = mono
	if g.tokens < 1 {
		return false
	}
	g.tokens--
	g.seen[id] = m.sent
	return true
}
