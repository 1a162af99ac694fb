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

	// inflight holds a token while a Renew call is under way, so a release
	// can wait for it instead of racing it on the same epoch document.
	inflight chan struct{}
	// wake tells the goroutine that holds were removed (it may exit) or
	// that a renewal is due sooner than it planned.
	wake chan struct{}

	holds map[*hold]struct{} // guarded by keepers.mu
	// next is when the next renewal is due (guarded by keepers.mu): an
	// interval after the last one (a quarter of it after a failure), or
	// sooner, an interval after the send of the acquire that granted a
	// hold which joined since. Zero while a renewal is under way: holds
	// that join then are not in it, and set it to when they are due.
	next time.Time
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
// that keeper's goroutine if it has none, and sets h.keeper. sent is when
// the acquire that granted h was sent, which its deadline counts from: h
// is renewed no later than an interval after it, however long the acquire
// took to be answered.
func join(h *hold, sent time.Time) {
	id := h.m.keeperID
	keepers.mu.Lock()
	defer keepers.mu.Unlock()
	if keepers.m == nil {
		keepers.m = make(map[keeperID]*keeper)
	}
	due := sent.Add(id.interval)
	k := keepers.m[id]
	if k == nil {
		k = &keeper{id: id, inflight: make(chan struct{}, 1), wake: make(chan struct{}, 1), holds: make(map[*hold]struct{}), next: due}
		keepers.m[id] = k
		go k.run()
	} else if k.next.IsZero() || due.Before(k.next) {
		k.next = due
		k.signal()
	}
	k.holds[h] = struct{}{}
	h.keeper = k
}

func (k *keeper) signal() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// remove stops renewing h.
func (k *keeper) remove(h *hold) {
	keepers.mu.Lock()
	delete(k.holds, h)
	keepers.mu.Unlock()
	k.signal()
}

// awaitRenewal waits until no renewal is in flight, or done is closed; it
// reports whether none is. After remove(h), a renewal that may include h
// has then finished.
func (k *keeper) awaitRenewal(done <-chan struct{}) bool {
	select {
	case k.inflight <- struct{}{}:
		<-k.inflight
		return true
	case <-done:
		return false
	}
}

func (k *keeper) run() {
	clock := k.id.clock
	for {
		keepers.mu.Lock()
		next := k.next
		keepers.mu.Unlock()
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
		k.next = time.Time{}
		// Taken before keepers.mu is released, so an awaitRenewal after
		// remove cannot slip between the snapshot and the renewal.
		k.inflight <- struct{}{}
		keepers.mu.Unlock()

		ok := k.renew(batch)
		<-k.inflight

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
		keepers.mu.Lock()
		if k.next.IsZero() || next.Before(k.next) {
			k.next = next
		}
		keepers.mu.Unlock()
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
