package dsync

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"
)

// A keeper renews every hold that shares a backend, a TTL, a renew
// interval and a clock with one Backend.Renew call per interval, however
// many locks the process holds. Its goroutine runs
// while it has holds and exits when the last one is removed.
type keeper struct {
	id keeperID

	// inflight is held while a Renew call is under way, so a release can
	// wait for it instead of racing it on the same epoch document.
	inflight sync.Mutex
	// wake tells the goroutine that holds were removed, so it can exit
	// as soon as it has none.
	wake chan struct{}

	holds map[*hold]struct{} // guarded by keepers.mu
}

type keeperID struct {
	backend  Backend
	ttl      time.Duration
	interval time.Duration
	clock    Clock
	// mutex is set only when backend or clock cannot be a map key: the
	// Mutex then gets a keeper of its own.
	mutex *Mutex
}

var keepers struct {
	mu sync.Mutex
	m  map[keeperID]*keeper
}

// keeperIDOf is the keeper m's holds join, computed once by NewMutex.
func keeperIDOf(m *Mutex) keeperID {
	id := keeperID{backend: m.backend, ttl: m.cfg.ttl, interval: m.cfg.renewInterval, clock: m.cfg.clock}
	if !reflect.TypeOf(m.backend).Comparable() || !reflect.TypeOf(m.cfg.clock).Comparable() {
		id.mutex = m
	}
	return id
}

// join adds h to the keeper for its Mutex's backend and settings, starting
// that keeper's goroutine if it has none, and sets h.keeper.
func join(h *hold) {
	id := h.m.keeperID
	keepers.mu.Lock()
	defer keepers.mu.Unlock()
	if keepers.m == nil {
		keepers.m = make(map[keeperID]*keeper)
	}
	k := keepers.m[id]
	if k == nil {
		k = &keeper{id: id, wake: make(chan struct{}, 1), holds: make(map[*hold]struct{})}
		keepers.m[id] = k
		go k.run()
	}
	k.holds[h] = struct{}{}
	h.keeper = k
}

// remove stops renewing h. With wait it also waits for a renewal that may
// include h to finish.
func (k *keeper) remove(h *hold, wait bool) {
	keepers.mu.Lock()
	delete(k.holds, h)
	keepers.mu.Unlock()
	select {
	case k.wake <- struct{}{}:
	default:
	}
	if wait {
		k.inflight.Lock()
		k.inflight.Unlock() //nolint:staticcheck // an empty critical section: waiting is the point
	}
}

func (k *keeper) run() {
	clock := k.id.clock
	next := clock.Now().Add(k.id.interval)
	for {
		fired := make(chan struct{})
		stop := clock.AfterFunc(next.Sub(clock.Now()), func() { close(fired) })
		select {
		case <-fired:
		case <-k.wake:
			stop()
			if k.exitIfIdle() {
				return
			}
			continue
		}

		keepers.mu.Lock()
		if len(k.holds) == 0 {
			delete(keepers.m, k.id)
			keepers.mu.Unlock()
			return
		}
		batch := make([]*hold, 0, len(k.holds))
		for h := range k.holds {
			if h.active() {
				batch = append(batch, h)
			}
		}
		// Taken before keepers.mu is released, so remove(h, true) cannot
		// slip between the snapshot and the renewal.
		k.inflight.Lock()
		keepers.mu.Unlock()

		ok := k.renew(batch)
		k.inflight.Unlock()

		if ok {
			next = clock.Now().Add(k.id.interval)
		} else {
			// Try again sooner: the hold's deadline is TTL − margin after the
			// last confirmed renewal, which leaves several quarter-intervals.
			// The failed renewal may still be applied later, even after this
			// retry: harmless, since a backend's renewals only ever raise a
			// lease's expiry, and the deadline moves only on a confirmation
			// that arrives in time, from the send time of the renewal it
			// confirms.
			next = clock.Now().Add(k.id.interval / 4)
		}
	}
}

func (k *keeper) exitIfIdle() bool {
	keepers.mu.Lock()
	defer keepers.mu.Unlock()
	if len(k.holds) > 0 {
		return false
	}
	delete(keepers.m, k.id)
	return true
}

// renew renews batch in one backend call and applies the outcome to each
// hold; it reports whether the call itself succeeded.
func (k *keeper) renew(batch []*hold) bool {
	if len(batch) == 0 {
		return true
	}
	leases := make([]Lease, len(batch))
	for i, h := range batch {
		leases[i] = h.lease
	}
	// No reply later than TTL after sending can extend any of these holds.
	ctx, cancel := context.WithTimeout(context.Background(), k.id.ttl)
	defer cancel()
	sent := k.id.clock.Now()
	applied, err := k.id.backend.Renew(ctx, k.id.ttl, leases)
	if err == nil && len(applied) != len(leases) {
		err = fmt.Errorf("backend answered for %d of %d leases", len(applied), len(leases))
	}
	if err != nil {
		for _, h := range batch {
			h.m.report(fmt.Errorf("dsync: renew %q: %w", h.lease.Key, err))
		}
		return false
	}
	for i, h := range batch {
		if applied[i] {
			h.extend(sent)
		} else {
			h.lose(fmt.Errorf("%w: %q: the backend refused to renew token %d", ErrLost, h.lease.Key, h.lease.Token))
		}
	}
	return true
}
