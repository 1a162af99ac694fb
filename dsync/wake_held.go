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
// Each Held hint also carries the highest expiry of the claim's session
// that the store confirmed to its owner (driver.Event.Until, store
// time): the session's stored expiry is at least that, since a stored
// expiry never goes down. A waiter reads the claim's session only once
// the latest such expiry has passed (wait.go), not each time the expiry
// it last read has: while the owner's renewals are confirmed, an idle
// waiter never reads it (it read it once per TTL or so). A Held hint
// that comes late, or again, carries an expiry no later than one it
// carried before, so it can never put a read off past the session's
// stored expiry: the waiter keeps the latest. Nor can a forged one (sent
// by whoever can read the hint key from the store) put it off by more
// than a TTL past the moment it came: a waiter takes an expiry up to one
// TTL of its own past the store's latest possible time, which no
// confirmed renewal of a Client of its TTL exceeds. An owner of an older
// release sends no expiry (zero), and a waiter of an older release
// ignores it: either way the waiter reads the session as before.
//
// This is what lets a process that hints reach stop reading the store's
// stream (dsync/hint's pause.go): its waiters need the stream no more
// than they need polls.

// beatEvery is how often the owner of a claim that is waited for sends
// its Held hints: twice per poll interval, so that one may be late
// without costing the waiter a look.
func (w *wakeups) beatEvery() time.Duration { return max(w.env.poll/2, time.Millisecond) }

// heldNews is what the Held hints about a claim told: when the last came
// (local monotonic), and the latest expiry of the claim's session that
// they carried (store time; zero if none did).
type heldNews struct {
	at      time.Duration
	expires time.Time
}

// sendHeld tells the processes that wait for k that it has not ended,
// and until when its session lasts at least: its highest expiry that the
// store confirmed to us (zero if unknown).
func (w *wakeups) sendHeld(k waitKey) {
	w.mu.Lock()
	m, ours := w.mine[k]
	w.mu.Unlock()
	var lasts time.Time
	if ours && m.session != "" && w.env.confirmed != nil {
		lasts = w.env.confirmed(m.session)
	}
	e := driver.Event{Kind: driver.Held, Key: k.key, Epoch: k.epoch, Until: lasts, Proc: w.proc}
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

// heldLocked takes in a Held hint for k that says k's session lasts at
// least until lasts (zero: it does not say), if local waiters wait for
// k; no later than a TTL from now. w.mu is held.
func (w *wakeups) heldLocked(k waitKey, lasts time.Time) {
	if len(w.local[k]) > 0 {
		h := w.held[k]
		h.at = w.env.mono()
		if limit := w.env.now().Latest.Add(w.env.ttl); lasts.After(limit) {
			lasts = limit
		}
		if lasts.After(h.expires) {
			h.expires = lasts
		}
		w.held[k] = h
	}
}

// lasts returns the later of expires, an expiry of k's session as read,
// and the latest that Held hints about k carried: its stored expiry is
// at least that.
func (w *wakeups) lasts(k waitKey, expires time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h := w.held[k].expires; h.After(expires) {
		return h
	}
	return expires
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
	h, ok := w.held[k]
	if !ok {
		return false, 0, false
	}
	until = h.at + w.env.poll
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
// its session's expiry by the read of the session wait makes once the
// expiry the Held hints carry has passed. So an idle waiter costs the
// store its renewals and its revoke checks.
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
