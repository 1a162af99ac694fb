package wake

import (
	"sync"
	"time"
)

// Lingering read claims (dsync's rwlinger.go) are watched here: an
// RWMutex that keeps its read claim after its last RUnlock must let it
// go as soon as a writer may wait behind it, and may keep it only while
// this process can hear so. What tells it is what tells an owner that a
// waiter waits (announce.go, owner.go): another process's Waiting event,
// by the store's stream or by direct hints, or a waiter of this process.
//
// A Waiting event for the claim itself says that a waiter waits for it;
// one for a later claim of its key, or from a waiter whose own claim
// comes after it, says so too: a read claim waits only for a writer, and
// a writer after the lingering claim waits for it, whichever claim it
// announced first. A stale one only ends a linger early.
//
// The watches are one part, what a waiter is known by two others (owner
// and registry): a watch is registered before those are asked, and each
// way of hearing a waiter records it there before it takes the watches
// (doc.go, "A linger hears every waiter").

// lingers is the watches of our lingering read claims. Its lock guards
// its map; no other lock is taken under it.
type lingers struct {
	mu sync.Mutex
	// by key and epoch, each with what to call once a waiter may wait
	// behind it
	watch map[string]map[uint64]func()
}

func newLingers() *lingers {
	return &lingers{watch: make(map[string]map[uint64]func())}
}

// WatchLinger starts watching k, a claim of ours that lingers: fire is
// called once (under no lock of the Hub's, in whatever goroutine heard
// it) when a waiter may wait behind it, or when this process can no
// longer hear that. It reports false, and watches nothing (fire is not
// called), if this process cannot hear waiters or a waiter behind k is
// known already.
func (h *Hub) WatchLinger(k ClaimID, fire func()) bool {
	h.lingers.add(k, fire)
	if h.canHear() && !h.waiterKnown(k) {
		return true
	}
	// Taken back, unless a waiter heard meanwhile took it (and calls
	// fire): then it was watched, and heard at once.
	return !h.lingers.remove(k)
}

// UnwatchLinger stops watching k (its claim ended).
func (h *Hub) UnwatchLinger(k ClaimID) { h.lingers.unwatch(k) }

// canHear reports whether this process hears that another waits for a
// claim of its: direct hints carry Waiting events whether or not the
// store's stream is live; without them, only the live stream does.
func (h *Hub) canHear() bool {
	return h.feed() != nil && !h.isClosed() && !h.off.Load() && (h.direct() || h.healthy.Load())
}

// waiterKnown reports whether a waiter may wait behind k, a claim of
// ours, as far as this process has heard: an announcement in force for
// k or a later claim of its key, or a waiter of this process for such a
// claim.
func (h *Hub) waiterKnown(k ClaimID) bool {
	var now time.Time
	if h.feed() != nil {
		now = h.env.Now().Earliest
	}
	return h.owner.waitedFor(k, now) || h.waiters.waiting(k)
}

// heardLocal takes the watches that a waiter of this process for key's
// epoch, with its own claim own, may wait behind, and calls them.
func (h *Hub) heardLocal(key string, epoch, own uint64) {
	runAll(h.lingers.heard(key, epoch, own))
}

func (l *lingers) add(k ClaimID, fire func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watch[k.Key] == nil {
		l.watch[k.Key] = make(map[uint64]func())
	}
	l.watch[k.Key][k.Epoch] = fire
}

// remove takes k's watch back, and reports whether it was still there.
func (l *lingers) remove(k ClaimID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.watch[k.Key][k.Epoch]
	l.unwatchLocked(k)
	return ok
}

// unwatch stops watching k.
func (l *lingers) unwatch(k ClaimID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unwatchLocked(k)
}

func (l *lingers) unwatchLocked(k ClaimID) {
	if m := l.watch[k.Key]; m != nil {
		delete(m, k.Epoch)
		if len(m) == 0 {
			delete(l.watch, k.Key)
		}
	}
}

// heard takes the watches of key's lingering claims that a waiter for
// epoch, with its own claim own (0: unknown), may wait behind, and
// returns their fire functions, to be called once l.mu is released.
func (l *lingers) heard(key string, epoch, own uint64) []func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var fire []func()
	for e, f := range l.watch[key] {
		if epoch >= e || own > e {
			fire = append(fire, f)
			l.unwatchLocked(ClaimID{key, e})
		}
	}
	return fire
}

// deaf takes every watch (this process can no longer hear waiters) and
// returns their fire functions.
func (l *lingers) deaf() []func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var fire []func()
	for _, m := range l.watch {
		for _, f := range m {
			fire = append(fire, f)
		}
	}
	clear(l.watch)
	return fire
}
