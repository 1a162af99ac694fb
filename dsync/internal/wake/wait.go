package wake

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A waiter's wait: it sleeps until an event about the claim it waits
// for, the claim's session can have expired, or it is time to look
// again.

// A Blocker is the claim a waiter waits for, as its walk read it.
type Blocker struct {
	Epoch   uint64
	Session string
	// Expires is, in store time, when the waiter looks at it again if
	// nothing else wakes it: its session's expiry when read.
	Expires time.Time
	// Weight is the units it holds of a weighted key, 0 for other terms:
	// what its end frees for a waiter short of units (WaitAny).
	Weight int64
}

// Mark returns the count of the ends of claims made or heard of so far,
// for Wait: a waiter takes it before the walk that finds what it waits
// for (registry.mark).
func (h *Hub) Mark() uint64 { return h.waiters.mark() }

// Wait blocks a waiter whose claim of key is behind blocker until
// blocker's end may have been recorded: an Ended event for it, the moment
// its session can have expired (as read, or as its owner's Held hints
// say), or the poll interval (the safety poll interval while the stream
// is live; later while the blocker's owner tells this process by Held
// hints that it has not ended: held.go). It returns nil to walk again,
// or ctx's cause; heard is true when it was woken by word that the
// blocker may have ended (its end, here or by an event or hint, or a
// nudge to look), not by its own timers. need is how many ends the
// waiter needs, blocker's among them (driver.Event.Need). since is the
// mark taken before the walk that found blocker live: an end of blocker
// made or heard of since then wakes the waiter at once, though it came
// before the waiter registered for it.
func (h *Hub) Wait(ctx context.Context, key string, own uint64, blocker Blocker, need, since uint64) (heard bool, err error) {
	k := ClaimID{key, blocker.Epoch}
	c, leave := h.waiters.enter(k, since)
	defer leave()
	h.settleSoon() // after enter: settling wakes the waiters registered
	select {
	case <-c:
		return true, nil // it ended after the walk read it live
	default:
	}
	// A lingering read claim of ours that this waiter may wait behind
	// ends now (linger.go): after it registered (WatchLinger asks the
	// registry after it registers a watch).
	h.heardLocal(key, blocker.Epoch, own)

	expires := blocker.Expires
	start := h.env.Mono()
	// Whatever happens, the caller looks again within poll, or as long
	// after as Held hints keep coming (lookAt).
	lookAgain := start + h.pollFor(ctx, k, own, need)
	for {
		// Held hints may say that the session lasts longer than read
		// (held.go): it is read only once that has passed.
		expires = h.waiters.lasts(k, expires)
		// A millisecond more makes the wait end strictly after expires.
		wait := min(until(h.env.Now(), expires)+time.Millisecond, h.lookAt(k, start, lookAgain)-h.env.Mono())
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
		if h.env.Mono() >= h.lookAt(k, start, lookAgain) {
			return false, nil
		}
		if expires = h.waiters.lasts(k, expires); !h.env.Now().Earliest.After(expires) {
			continue // a Held hint put the look, or the read, off
		}
		if !h.healthy.Load() && !h.trusted(k) {
			return false, nil
		}
		// The blocker's session may have run out. With events flowing, its
		// end would have been announced: one read of the session tells
		// whether it was renewed meanwhile, and the wait goes on until the
		// new expiry or the time to look again.
		alive, renewed, err := h.env.SessionAlive(ctx, blocker.Session)
		if err != nil || !alive || !renewed.After(expires) {
			return false, nil
		}
		expires = renewed
	}
}

// pollFor is how long a waiter for k relies on events before it looks
// again: the poll interval, or with the stream live (and k announced)
// the safety poll, shorter for LostWindow after the announcement; for a
// waiter without hints in a store where processes take them, the poll
// interval (mixed.go).
func (h *Hub) pollFor(ctx context.Context, k ClaimID, own, need uint64) time.Duration {
	cfg := h.env
	if !h.healthy.Load() {
		if h.direct() {
			// A direct hint may wake it before the poll.
			_, _ = h.ours.announce(ctx, k, own, need)
		}
		return cfg.Poll
	}
	if h.direct() && !h.trusted(k) {
		// The store's stream is live, and yet no Held hint says the
		// owner's hints reach us: if its process relies on hints (it
		// reads the store's stream no more), its end would come by
		// hints only.
		_, _ = h.ours.announce(ctx, k, own, need)
		return cfg.Poll
	}
	// The owner of the claim publishes its end if it has heard of us by
	// then, or when it hears of us if it ended the claim first. For
	// LostWindow after an announcement a waiter looks again at doubling
	// intervals (from the poll interval), covering ends that come soon
	// and were lost; after that only the safety poll.
	age, err := h.ours.announce(ctx, k, own, need)
	if err != nil {
		return cfg.Poll
	}
	if h.peerSeen.hintsAround(ctx) {
		// The owner may be a process that hints reach, which does not
		// read our announcement on the stream (mixed.go).
		return cfg.Poll
	}
	if age < LostWindow {
		return min(max(cfg.Poll, age), cfg.SafetyPoll)
	}
	return cfg.SafetyPoll
}

// trustedUntil reports whether a waiter for k can sleep past its poll
// interval, and until when (local monotonic; for ours, no bound): k is a
// claim of ours, whose end wakes it directly, or a Held hint for it came
// within the poll interval. It asks the owner, then the registry: a
// claim of ours that ends between the two wakes its waiters anyway.
func (h *Hub) trustedUntil(k ClaimID) (ok bool, until time.Duration, bounded bool) {
	if !h.direct() {
		return false, 0, false
	}
	if h.owner.owns(k) {
		return true, 0, false
	}
	at, ok := h.waiters.heldAt(k)
	if !ok {
		return false, 0, false
	}
	until = at + h.env.Poll
	return h.env.Mono() < until, until, true
}

// trusted is trustedUntil's first answer.
func (h *Hub) trusted(k ClaimID) bool {
	ok, _, _ := h.trustedUntil(k)
	return ok
}

// lookAt is when a waiter for k that began waiting at start, and would
// look again at base, looks again: later while it is trusted
// (trustedUntil). Behind a claim of ours, not past a safety poll
// interval after start, as with the store's stream live. Behind another
// process's claim, a poll interval after the last Held hint, however
// long they come: every way the claim can end is covered without the
// safety poll, its end by the Held hints that stop (and the Ended hint),
// its session's expiry by the read of the session Wait makes once the
// expiry the Held hints carry has passed. So an idle waiter costs the
// store its renewals and its revoke checks.
func (h *Hub) lookAt(k ClaimID, start, base time.Duration) time.Duration {
	ok, until, bounded := h.trustedUntil(k)
	switch {
	case !ok:
		return base
	case !bounded:
		return max(base, start+h.env.SafetyPoll)
	default:
		return max(base, until)
	}
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
