package wake

import (
	"context"
	"sync"
	"time"
)

// A Mutex that locks again after a takeover sleeps until a claim above
// its own appears (dsync's relock.go): an announcement by a claim at or
// above the epoch it waits to see, or a claim of this process, wakes it.

// claimWatch is the waits for a key's claims to appear. Its lock guards
// its map; no other lock is taken under it.
type claimWatch struct {
	mu sync.Mutex
	// by key, each waiter with the epoch it waits to see claimed
	watch map[string]map[chan struct{}]uint64
}

func newClaimWatch() *claimWatch {
	return &claimWatch{watch: make(map[string]map[chan struct{}]uint64)}
}

// AwaitClaim waits until an event shows that key's epoch may have been
// claimed (an announcement by a claim at or above it, or a claim of this
// process), or for d; it reports false if ctx ended first.
func (h *Hub) AwaitClaim(ctx context.Context, key string, epoch uint64, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	c, leave := h.claims.enter(key, epoch)
	defer leave()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
	case <-t.C:
	case <-ctx.Done():
		return false
	}
	return true
}

// enter registers a wait for key's epoch to be claimed; leave ends it.
func (w *claimWatch) enter(key string, epoch uint64) (c chan struct{}, leave func()) {
	c = make(chan struct{}, 1)
	w.mu.Lock()
	if w.watch[key] == nil {
		w.watch[key] = make(map[chan struct{}]uint64)
	}
	w.watch[key][c] = epoch
	w.mu.Unlock()
	return c, func() {
		w.mu.Lock()
		delete(w.watch[key], c)
		if len(w.watch[key]) == 0 {
			delete(w.watch, key)
		}
		w.mu.Unlock()
	}
}

// seen wakes those waiting for a claim of key at or below epoch.
func (w *claimWatch) seen(key string, epoch uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c, want := range w.watch[key] {
		if want <= epoch {
			notify(c)
		}
	}
}
