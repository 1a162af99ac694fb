package hint

import (
	"sync"
	"sync/atomic"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Stats counts what a Feed did with hints since it was made. It is for
// status pages, and for tests that must show hints were used (a test that
// passes with hints on proves nothing of them if none woke a waiter).
type Stats struct {
	Sent     uint64 // datagrams sent, one per process sent to
	Received uint64 // datagrams read
	// Rejected: malformed (or of a release before hints were bound to
	// their receiver), failing their MAC (forged, sent under another
	// key, or sent to another process and played here), or read before
	// this process had read the key.
	Rejected uint64
	// Refused: authentic, but sent too long ago (or ahead), seen
	// already, or over the rate.
	Refused uint64
	Taken   uint64 // acted upon
	// Woke: ends taken of claims this process announced it waits for,
	// before the store's feed delivered them: waiters a hint woke first.
	Woke uint64
}

// Stats returns what the Feed counted so far.
func (f *Feed) Stats() Stats {
	c := &f.counts
	return Stats{Sent: c.sent.Load(), Received: c.received.Load(), Rejected: c.rejected.Load(),
		Refused: f.guard.refused.Load(), Taken: f.guard.taken.Load(), Woke: c.woke.Load()}
}

// counters are a Feed's Stats as they are counted (the guard counts what
// it refuses and takes), and the claims this process announced it waits
// for whose ends have not arrived, for Woke.
type counters struct {
	sent, received, rejected, woke atomic.Uint64

	mu       sync.Mutex
	awaiting map[awaitingKey]struct{}
}

// maxAwaiting bounds the claims remembered as announced (past it, all are
// forgotten: Woke then misses their ends).
const maxAwaiting = 4096

// awaitingKey is a claim this process announced it waits for.
type awaitingKey struct {
	key   string
	epoch uint64
}

// announced remembers the claim of e, if it is an announcement that this
// process waits for it, until its end arrives.
func (c *counters) announced(e driver.Event) {
	if e.Kind != driver.Waiting {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.awaiting == nil || len(c.awaiting) >= maxAwaiting {
		c.awaiting = make(map[awaitingKey]struct{})
	}
	c.awaiting[awaitingKey{e.Key, e.Epoch}] = struct{}{}
}

// endArrived forgets the claim of e, if it is an end, and counts a
// waiter woken if a hint (byHint) brought the end of a claim this process
// announced it waits for.
func (c *counters) endArrived(e driver.Event, byHint bool) {
	if e.Kind != driver.Ended {
		return
	}
	k := awaitingKey{e.Key, e.Epoch}
	c.mu.Lock()
	_, ok := c.awaiting[k]
	delete(c.awaiting, k)
	c.mu.Unlock()
	if ok && byHint {
		c.woke.Add(1)
	}
}
