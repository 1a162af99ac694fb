package dsync

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/chain"
)

// The waiter registry: a waiter sleeps until an event about the claim it
// waits for, the claim's session can have expired, or it is time to look
// again; a Mutex that locks again after a takeover sleeps until a claim
// above its own appears (relock.go).

// wait blocks a waiter whose claim of key is behind blocker until
// blocker's end may have been recorded: an Ended event for it, the moment
// its session can have expired (as read, or as its owner's Held hints
// say), or the poll interval (the safety poll
// interval while the stream is live; later while the blocker's owner
// tells this process by Held hints that it has not ended: wake_held.go). It
// returns nil to walk again, or ctx's cause; heard is true when it was
// woken by word that the blocker may have ended (its end, here or by an
// event or hint, or a nudge to look), not by its own timers. need is how
// many ends the waiter needs, blocker's among them (driver.Event.Need).
// since is the mark taken before the walk that found blocker live: an end
// of blocker made or heard of since then wakes the waiter at once, though
// it came before the waiter registered for it.
func (w *wakeups) wait(ctx context.Context, key string, own uint64, blocker chain.Blocker, need, since uint64) (heard bool, err error) {
	k := waitKey{key, blocker.Epoch}
	c, leave := w.enterLocal(k, since)
	defer leave()
	select {
	case <-c:
		return true, nil // it ended after the walk read it live
	default:
	}
	// A lingering read claim of ours that this waiter may wait behind
	// ends now (wake_linger.go).
	w.heardLocal(key, blocker.Epoch, own)

	expires := blocker.ExpiresAt
	start := w.env.mono()
	// Whatever happens, the caller looks again within poll, or as long
	// after as Held hints keep coming (lookAt).
	lookAgain := start + w.pollFor(ctx, k, own, need)
	for {
		// Held hints may say that the session lasts longer than read
		// (wake_held.go): it is read only once that has passed.
		expires = w.lasts(k, expires)
		// A millisecond more makes the wait end strictly after expires.
		wait := min(until(w.env.now(), expires)+time.Millisecond, w.lookAt(k, start, lookAgain)-w.env.mono())
		if wait <= 0 {
			return false, nil
		}
		t := time.NewTimer(jitterUp(wait))
		select {
		case <-c:
			t.Stop()
			return true, nil
		case <-ctx.Done():
			t.Stop()
			return false, context.Cause(ctx)
		case <-t.C:
		}
		if w.env.mono() >= w.lookAt(k, start, lookAgain) {
			return false, nil
		}
		if expires = w.lasts(k, expires); !w.env.now().Earliest.After(expires) {
			continue // a Held hint put the look, or the read, off
		}
		if !w.healthy.Load() && !w.trusted(k) {
			return false, nil
		}
		// The blocker's session may have run out. With events flowing, its
		// end would have been announced: one read of the session tells
		// whether it was renewed meanwhile, and the wait goes on until the
		// new expiry or the time to look again.
		alive, renewed, err := w.env.sessionAlive(ctx, blocker.Session)
		if err != nil || !alive || !renewed.After(expires) {
			return false, nil
		}
		expires = renewed
	}
}

// enterLocal registers a waiter of this process for k's end: its channel
// is notified when k ends here or an event says so, and at once if that
// happened after the mark since (the waiter's walk, which began then,
// may have read k before its end); leave unregisters it.
func (w *wakeups) enterLocal(k waitKey, since uint64) (c chan struct{}, leave func()) {
	c = make(chan struct{}, 1)
	w.mu.Lock()
	if w.local[k] == nil {
		w.local[k] = make(map[chan struct{}]struct{})
	}
	w.local[k][c] = struct{}{}
	if w.endsAt[k] > since {
		notify(c)
	}
	w.mu.Unlock()
	return c, func() {
		w.mu.Lock()
		delete(w.local[k], c)
		if len(w.local[k]) == 0 {
			delete(w.local, k)
			delete(w.held, k)
		}
		w.mu.Unlock()
	}
}

// mark returns the count of the ends of claims made or heard of so far.
// A waiter takes it before the walk that finds what it waits for, and
// gives it to wait: it can register only once the walk has told it what
// it waits for, and an end between the walk's read and the registration
// would otherwise reach nobody (the waiter would look again only at its
// poll interval).
func (w *wakeups) mark() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.endSeq
}

// noteEndLocked counts the end of k, made here or heard of, for the
// waiters that register after it (enterLocal). Only the latest ends are
// kept (maxRemote/2 at least): a waiter registers one walk after its
// mark, and far fewer ends come in a walk. w.mu is held.
func (w *wakeups) noteEndLocked(k waitKey) {
	w.endSeq++
	if len(w.endsAt) >= maxRemote {
		for e, at := range w.endsAt {
			if at+maxRemote/2 <= w.endSeq {
				delete(w.endsAt, e)
			}
		}
	}
	w.endsAt[k] = w.endSeq
}

// pollFor is how long a waiter for k relies on events before it looks
// again: the poll interval, or with the stream live (and k announced)
// the safety poll, shorter for lostWindow after the announcement; for a
// waiter without hints in a store where processes take them, the poll
// interval (wake_mixed.go).
func (w *wakeups) pollFor(ctx context.Context, k waitKey, own, need uint64) time.Duration {
	cfg := w.env
	if !w.healthy.Load() {
		if cfg.direct {
			// A direct hint may wake it before the poll.
			_, _ = w.announce(ctx, k, own, need)
		}
		return cfg.poll
	}
	if cfg.direct && !w.trusted(k) {
		// The store's stream is live, and yet no Held hint says the
		// owner's hints reach us: if its process relies on hints (it
		// reads the store's stream no more), its end would come by
		// hints only.
		_, _ = w.announce(ctx, k, own, need)
		return cfg.poll
	}
	// The owner of the claim publishes its end if it has heard of us by
	// then, or when it hears of us if it ended the claim first. For
	// lostWindow after an announcement a waiter looks again at doubling
	// intervals (from the poll interval), covering ends that come soon
	// and were lost; after that only the safety poll.
	age, err := w.announce(ctx, k, own, need)
	if err != nil {
		return cfg.poll
	}
	if w.hintsAround(ctx) {
		// The owner may be a process that hints reach, which does not
		// read our announcement on the stream (wake_mixed.go).
		return cfg.poll
	}
	if age < lostWindow {
		return min(max(cfg.poll, age), cfg.safetyPoll)
	}
	return cfg.safetyPoll
}

// until is how long, at least, until the store's earliest possible time
// passes t (0 if it has), the store's time being now.
func until(now driver.Interval, t time.Time) time.Duration {
	return max(t.Sub(now.Earliest), 0)
}

// jitterUp spreads waiters that wake at once a little: a wait grows by up
// to 1% or 10 ms, whichever is less, and never shrinks, so a waiter never
// looks before the moment it waits for (such as a session's expiry), nor
// much after it: FIFO order means only one waiter acts on it anyway.
func jitterUp(d time.Duration) time.Duration {
	return max(d+rand.N(min(d/100, 10*time.Millisecond)+1), time.Millisecond)
}

// awaitClaim waits until an event shows that key's epoch may have been
// claimed (an announcement by a claim at or above it, or a claim of this
// process), or for d; it reports false if ctx ended first.
func (w *wakeups) awaitClaim(ctx context.Context, key string, epoch uint64, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	c := make(chan struct{}, 1)
	w.mu.Lock()
	if w.claimWatch[key] == nil {
		w.claimWatch[key] = make(map[chan struct{}]uint64)
	}
	w.claimWatch[key][c] = epoch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.claimWatch[key], c)
		if len(w.claimWatch[key]) == 0 {
			delete(w.claimWatch, key)
		}
		w.mu.Unlock()
	}()
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

// claimSeenLocked wakes those waiting in awaitClaim for a claim of key at
// or below epoch. w.mu must be held.
func (w *wakeups) claimSeenLocked(key string, epoch uint64) {
	for c, want := range w.claimWatch[key] {
		if want <= epoch {
			notify(c)
		}
	}
}
