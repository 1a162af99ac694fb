package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Held hints, with direct hints on (ClientWithHints). The owner of a
// claim that another process announced it waits for tells that process,
// at once and then every half poll interval until the claim ends, that
// the claim has not ended (driver.Held, carried by hints only, to the
// processes that announced they wait for that claim). A waiter that
// hears so sleeps past its poll interval for as long as it keeps
// hearing so (lookAt): the Held hints are what tells it that
// hints from that owner reach it. An end lost, or Held hints lost, cost
// it at most the poll interval: it looks once a poll interval has passed
// since the last Held it heard. A waiter behind a claim of its own
// process is woken directly, and sleeps as long.
//
// This is what lets a process that hints reach stop reading the store's
// stream (dsync/hint's pause.go): its waiters need the stream no more
// than they need polls.

// beatEvery is how often the owner of a claim that is waited for sends
// its Held hints: twice per poll interval, so that one may be late
// without costing the waiter a look.
func (w *wakeups) beatEvery() time.Duration { return max(w.env.poll/2, time.Millisecond) }

// sendHeld tells the processes that wait for k that it has not ended.
func (w *wakeups) sendHeld(k waitKey) {
	e := driver.Event{Kind: driver.Held, Key: k.key, Epoch: k.epoch, Proc: w.proc}
	_ = w.feed.Publish(context.Background(), e) // hints only, best effort
}

// heldDueLocked returns the claims of ours that another process announced
// it waits for, with the announcement in force. w.mu is held.
func (w *wakeups) heldDueLocked(now time.Time) []waitKey {
	var due []waitKey
	for k, until := range w.remote {
		if _, ours := w.mine[k]; ours && until.After(now) {
			due = append(due, k)
		}
	}
	return due
}

// beatLoop sends our Held hints every beatEvery while some are due,
// until close; kicked when one may have become due.
func (w *wakeups) beatLoop() {
	defer close(w.beatDone)
	t := time.NewTimer(0)
	<-t.C
	for {
		now := w.env.now().Earliest
		w.mu.Lock()
		due := w.heldDueLocked(now)
		w.mu.Unlock()
		if len(due) == 0 {
			select {
			case <-w.beatStop:
				return
			case <-w.beatKick:
				continue
			}
		}
		for _, k := range due {
			w.sendHeld(k)
		}
		t.Reset(w.beatEvery())
		select {
		case <-w.beatStop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// heldLocked takes in a Held hint for k, if local waiters wait for it.
// w.mu is held.
func (w *wakeups) heldLocked(k waitKey) {
	if len(w.local[k]) > 0 {
		w.held[k] = w.env.mono()
	}
}

// trustedLocked reports whether a waiter for k can sleep past its poll
// interval: k is a claim of ours, whose end wakes it directly, or a Held
// hint for it came within the poll interval; and until when (local
// monotonic; for ours, no bound). w.mu is held.
func (w *wakeups) trustedLocked(k waitKey) (ok bool, until time.Duration, bounded bool) {
	if !w.env.direct {
		return false, 0, false
	}
	if _, ours := w.mine[k]; ours {
		return true, 0, false
	}
	at, ok := w.held[k]
	if !ok {
		return false, 0, false
	}
	until = at + w.env.poll
	return w.env.mono() < until, until, true
}

// trusted is trustedLocked, taking w.mu.
func (w *wakeups) trusted(k waitKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok, _, _ := w.trustedLocked(k)
	return ok
}

// lookAt is when a waiter for k that began waiting at start, and would
// look again at base, looks again: later while it is trusted
// (trustedLocked). Behind a claim of ours, not past a safety poll
// interval after start, as with the store's stream live. Behind another
// process's claim, a poll interval after the last Held hint, however
// long they come: every way the claim can end is covered without the
// safety poll, its end by the Held hints that stop (and the Ended hint),
// its session's expiry by the read of the session wait makes at that
// moment. So an idle waiter costs the store its renewals and that read.
func (w *wakeups) lookAt(k waitKey, start, base time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok, until, bounded := w.trustedLocked(k)
	switch {
	case !ok:
		return base
	case !bounded:
		return max(base, start+w.env.safetyPoll)
	default:
		return max(base, until)
	}
}
