package wake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
)

// The Hub as the feed's handler: what the stream's state and other
// processes' events tell this one, handed to the part that owns it. An
// announcement that someone waits for a claim is kept (owner), answered
// if the claim ended here, and heard by lingering claims (lingers); an
// end wakes this process's waiters (registry); a Held hint is news for
// them.

// Live implements driver.FeedHandler: the stream turned live. The ends of
// our claims made while it was not live, too long ago for the stream to
// replay the announcements made for them, are announced; every local
// waiter looks once more (and announces itself again if the stream went
// down: a stream reopened at once, with no Down, keeps our announcements,
// which were published whatever our stream did; the ends of claims made
// before it are published as if announcements for them had passed unseen,
// see owner.seenAll).
func (h *Hub) Live(gen uint64) {
	for _, k := range h.owner.live() {
		h.sendEnded(context.Background(), k)
	}
	h.paused.Store(false)
	h.healthy.Store(true)
	h.waiters.wakeAll()
}

// Down implements driver.FeedHandler: every local waiter falls back to
// polling at once, and our announcements are forgotten (they are made
// again once the stream is back).
//
// Paused (hint.ErrStoreFeedPaused: direct hints reach this process, so
// it does not read the store's stream) is no failure: waiters whose
// claim's owner sends Held hints rely on them (held.go), the others
// poll, and ends are published to the processes that announced they
// wait, through hints.
func (h *Hub) Down(err error, off bool) {
	paused := errors.Is(err, hint.ErrStoreFeedPaused)
	h.paused.Store(paused)
	h.healthy.Store(false)
	if off {
		// Before the lingering claims' watches are taken: a watch made
		// from now on finds that this process cannot hear (WatchLinger).
		h.off.Store(true)
	}
	h.ours.forget()
	h.waiters.wakeAll()
	h.mu.Lock()
	first := !h.noticed && !paused
	h.noticed = h.noticed || !paused
	h.mu.Unlock()
	if off || !h.direct() {
		// No Waiting event reaches us any more: lingering claims end.
		runAll(h.lingers.deaf())
	}
	switch {
	case paused:
		h.env.Logger.Debug("dsync: " + err.Error())
	case off:
		h.env.Logger.Warn(fmt.Sprintf("dsync: wake-ups are off: %v; waiters poll", err))
	case first:
		h.env.Logger.Warn("dsync: wake-up event stream unavailable; waiters poll", slog.Any("err", err))
	default:
		h.env.Logger.Debug("dsync: wake-up event stream unavailable; waiters poll", slog.Any("err", err))
	}
}

// Event implements driver.FeedHandler: another process's event.
func (h *Hub) Event(e driver.Event) {
	if e.Proc == h.proc || e.Key == "" || e.Epoch == 0 {
		return
	}
	k := ClaimID{e.Key, e.Epoch}
	h.waiters.nudge(e)
	switch e.Kind {
	case driver.Waiting:
		h.waiting(e, k)
	case driver.Ended:
		h.waiters.heardEnd(k)
	case driver.Held:
		h.waiters.heardHeld(k, e.Until)
	}
}

// waiting takes in another process's announcement that it waits for k.
func (h *Hub) waiting(e driver.Event, k ClaimID) {
	now := h.env.Now().Earliest
	inForce := e.Until.After(now)
	if inForce {
		// A claim above k exists: whoever waits for the key's claims there
		// to appear (relock) looks again.
		h.claims.seen(e.Key, k.Epoch+1)
	}
	endedHere, ours := h.owner.waiting(k, e.Until, now)
	if inForce {
		// After the owner recorded it (WatchLinger checks there after it
		// registers a watch): a lingering read claim it may wait behind
		// ends (linger.go).
		runAll(h.lingers.heard(e.Key, e.Epoch, e.Own))
	}
	switch {
	case endedHere:
		// We ended that claim before the announcement reached us: answer
		// it now, or the waiter would learn of the end only at its next
		// look.
		h.sendEnded(context.Background(), k)
	case ours && h.direct():
		// Tell the waiter at once that its hints come (held.go).
		h.held.send(k)
		h.held.kick()
	}
}
