package dsync

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/wake"
)

// A read claim that outlives RUnlock (docs/architecture.md, "Read holds
// outlive RUnlock"), where WithReadLinger turns it on (it is off by
// default). After its last RUnlock, an RWMutex value keeps its read claim
// for its linger (at most the renew interval), and an RLock in that time
// holds it again with no request: a process that reads in a loop makes a
// claim per linger, not per RLock. The claim stays an ordinary shared
// hold of the lease throughout, so no rule of the queue changes; what
// changes is that the store may show a reader while no RLock holds, that
// successive read holds share a token, and that a TryLock (which never
// announces) fails while it lingers (RWMutex's doc).
//
// It ends (its end is inserted) as soon as a writer may wait behind it
// (the wake-ups hear it: wake.Hub.WatchLinger), when the linger passes,
// or when this RWMutex locks for writing; it is never taken again once
// its session is lost, and Close ends it with every claim. It lingers only where this
// process hears waiters (direct hints or the store's live stream): where
// it cannot, a writer would wait for the whole linger.
//
// One RLock at a time holds the lingering claim; RLocks meanwhile claim
// anew, as before. If a writer is heard while an RLock holds it, no RLock
// takes it again: it ends at that RUnlock, and RLocks after the writer
// queue behind it.

// lingerState is an RWMutex's lingering read claim.
type lingerState struct {
	h *hold
	// held: an RLock holds it; heard: a writer may wait behind it, so
	// it ends at the next RUnlock; watched: the wake-ups watch it.
	held, heard, watched bool
	// stop stops the linger's timer (nil while held); until is when the
	// linger ends, on rw's clock: a timer late after a pause must not
	// lengthen it.
	stop  func() bool
	until time.Time
}

// retake returns rw's lingering claim as a new read hold, if it lingers
// (no RLock holds it, no writer was heard) and its session is valid.
func (rw *RWMutex) retake() *hold {
	rw.mu.Lock()
	l := rw.lingering
	rw.mu.Unlock()
	if l == nil {
		return nil
	}
	// Its deadline may have passed unseen (a pause): this loses the hold
	// now, under no lock of rw's.
	l.h.expireIfDue()
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.lingering != l || l.held || l.heard || !rw.cfg.clock.Now().Before(l.until) {
		return nil
	}
	l.h.idle.Store(false) // a loss from now on is the RLock's
	if !l.h.active() {
		// Lost (its session was lost or revoked): never taken again. Its
		// timer finds it gone and sends nothing.
		rw.lingering = nil
		rw.unwatch(l)
		return nil
	}
	if !l.stop() {
		l.h.idle.Store(true)
		return nil // its timer is ending it
	}
	l.stop, l.held = nil, true
	l.h.renewSince()
	return l.h
}

// linger keeps h, a read hold that the last RUnlock of this process just
// took, as rw's lingering claim, and reports whether it did; if not, the
// caller releases h.
func (rw *RWMutex) linger(h *hold) bool {
	if rw.cfg.readLinger <= 0 {
		return false
	}
	h.expireIfDue()
	rw.mu.Lock()
	defer rw.mu.Unlock()
	l := rw.lingering
	switch {
	case l != nil && l.h != h:
		return false // another claim lingers (h was claimed while it was held)
	case l != nil && l.heard:
		rw.lingering = nil
		return false
	case !h.active():
		if l != nil {
			rw.lingering = nil
			rw.unwatch(l)
		}
		return false
	}
	if l == nil {
		l = &lingerState{h: h, until: rw.cfg.clock.Now().Add(rw.cfg.readLinger)}
		k := wake.ClaimID{Key: h.claim.Key, Epoch: h.claim.Epoch}
		if !rw.client.wake.WatchLinger(k, func() { rw.heard(l) }) {
			return false // no way to hear a writer, or one waits already
		}
		l.watched = true
		rw.lingering = l
	}
	left := l.until.Sub(rw.cfg.clock.Now())
	if left <= 0 {
		rw.lingering = nil
		rw.unwatch(l)
		return false
	}
	l.held = false
	h.idle.Store(true)
	l.stop = rw.cfg.clock.AfterFunc(left, func() { rw.lingerPassed(l) })
	return true
}

// heard: a writer may wait behind l (or this process can no longer hear
// one). Held, it ends at its RUnlock; lingering, it ends now.
func (rw *RWMutex) heard(l *lingerState) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	l.watched = false
	if rw.lingering != l {
		return
	}
	if l.held {
		l.heard = true
		return
	}
	if !l.stop() {
		return // its timer is ending it
	}
	rw.lingering = nil
	rw.client.inBackground(func() { rw.endLinger(context.Background(), l) })
}

// lingerPassed ends l, whose linger passed with no RLock taking it.
func (rw *RWMutex) lingerPassed(l *lingerState) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.lingering != l || l.held {
		return
	}
	rw.lingering = nil
	rw.client.inBackground(func() { rw.endLinger(context.Background(), l) })
}

// dropLinger ends rw's lingering claim, if one lingers, before this
// RWMutex locks for writing: its writer would wait behind it, and a
// TryLock would fail for it.
func (rw *RWMutex) dropLinger(ctx context.Context) {
	rw.mu.Lock()
	l := rw.lingering
	if l == nil || l.held || !l.stop() {
		rw.mu.Unlock()
		return
	}
	rw.lingering = nil
	rw.mu.Unlock()
	rw.endLinger(ctx, l)
}

// forget drops h as rw's lingering claim, if it is: an RUnlock that is
// not this process's last releases it.
func (rw *RWMutex) forget(h *hold) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if l := rw.lingering; l != nil && l.h == h {
		rw.lingering = nil
		rw.unwatch(l)
	}
}

// unwatch stops the wake-ups' watch of l. rw.mu is held (the wake-ups
// call l's watch under no lock).
func (rw *RWMutex) unwatch(l *lingerState) {
	if l.watched {
		l.watched = false
		rw.client.wake.UnwatchLinger(wake.ClaimID{Key: l.h.claim.Key, Epoch: l.h.claim.Epoch})
	}
}

// endLinger ends l's claim, which no RLock holds and rw no longer keeps,
// within the release timeout whatever ctx does (as a release).
func (rw *RWMutex) endLinger(ctx context.Context, l *lingerState) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rw.cfg.releaseTimeout())
	defer cancel()
	h := l.h
	rw.client.wake.UnwatchLinger(wake.ClaimID{Key: h.claim.Key, Epoch: h.claim.Epoch})
	rw.progress.Unwatch(h)
	lostErr := h.end()
	h.keeper.Remove(h)
	if lostErr != nil {
		return // its lease ends it, as any lost hold's
	}
	if err := rw.client.end(ctx, h.claim, true); err != nil && !errors.Is(err, ErrClosed) {
		rw.report(err)
	}
}
