package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// What other processes' events tell this one: an announcement that
// someone waits for a claim (kept, and answered if the claim ended here),
// an end that wakes this process's waiters.

// Event implements driver.FeedHandler: another process's event.
func (w *wakeups) Event(e driver.Event) {
	if e.Proc == w.proc || e.Key == "" || e.Epoch == 0 {
		return
	}
	k := waitKey{e.Key, e.Epoch}
	now := w.env.now().Earliest
	var fire []func()
	defer func() { runAll(fire) }() // after w.mu is released
	w.mu.Lock()
	if e.Kind == driver.Waiting && e.Until.After(now) {
		fire = w.heardLocked(e.Key, e.Epoch, e.Own) // wake_linger.go
	}
	w.nudgeNextLocked(e, k)
	switch e.Kind {
	case driver.Waiting:
		if w.waitingLocked(e, k, now) {
			// We ended that claim before the announcement reached us:
			// answer it now, or the waiter would learn of the end only at
			// its next look.
			w.mu.Unlock()
			w.sendEnded(context.Background(), k)
			return
		}
		if _, ours := w.mine[k]; ours && w.env.direct {
			// Tell the waiter at once that its hints come (wake_held.go).
			w.mu.Unlock()
			w.sendHeld(k)
			notify(w.beatKick)
			return
		}
	case driver.Ended:
		w.endedLocked(k)
	case driver.Held:
		w.heldLocked(k, e.Until)
	}
	w.mu.Unlock()
}

// nudgeNextLocked: activity about the key of a waiter that is next in
// line may mean the end it waits for was lost; the waiter looks (one
// read), at most once per nextLookEvery. Not on that end itself, which
// wakes it anyway, nor on a Held hint for the claim it waits for: its
// owner says the claim has not ended (TestHeldSparesTheWaiterNextInLine).
// w.mu is held.
func (w *wakeups) nudgeNextLocked(e driver.Event, k waitKey) {
	n, ok := w.next[e.Key]
	if !ok || n.epoch == k.epoch && (e.Kind == driver.Ended || e.Kind == driver.Held) {
		return
	}
	if mono := w.env.mono(); mono-n.looked >= nextLookEvery {
		w.next[e.Key] = nextInLine{n.epoch, mono}
		for c := range w.local[waitKey{e.Key, n.epoch}] {
			notify(c)
		}
	}
}

// waitingLocked takes in another process's announcement that it waits for
// claim k until e.Until, and reports whether this process ended k lately
// (the caller answers it). w.mu is held.
func (w *wakeups) waitingLocked(e driver.Event, k waitKey, now time.Time) (endedHere bool) {
	if !e.Until.After(now) {
		return false
	}
	// A claim above k exists: whoever waits for the key's claims there
	// to appear (relock.go) looks again.
	w.claimSeenLocked(e.Key, k.epoch+1)
	if at, ok := w.ends[k]; ok && w.env.mono()-at < endMemory {
		return true
	}
	if len(w.remote) >= maxRemote {
		w.expireLocked(now)
	}
	// Only the owner of the claim acts on an announcement (it publishes
	// the claim's end): others keep it only a while, in case the claim
	// is ours and we have not learnt it yet.
	until := e.Until
	if _, ours := w.mine[k]; !ours {
		until = minTime(until, now.Add(w.othersHold()))
	}
	if until.After(w.remote[k]) {
		w.remote[k] = until
	}
	w.noteTopLocked(k, until, now)
	return false
}

// noteTopLocked records k, announced until until, as the highest waiter
// of its key if it is: the highest waiter of a key hints that
// announcements for lower claims were lost; a hint as old as it was
// before announcements held an hour. w.mu is held.
func (w *wakeups) noteTopLocked(k waitKey, until, now time.Time) {
	top := w.remoteTop[k.key]
	if k.epoch < top.epoch || k.epoch == top.epoch && !until.After(top.until) {
		return
	}
	if len(w.remoteTop) >= maxRemote {
		clear(w.remoteTop)
	}
	w.remoteTop[k.key] = topWait{k.epoch, minTime(until, now.Add(w.othersHold()))}
}

// endedLocked wakes this process's waiters for claim k, which another
// process ended; the waiters of the claim after it are next in line (if k
// was not withdrawn). w.mu is held.
func (w *wakeups) endedLocked(k waitKey) {
	for c := range w.local[k] {
		notify(c)
	}
	w.noteEndLocked(k)
	if after := (waitKey{k.key, k.epoch + 1}); len(w.local[after]) > 0 {
		if len(w.next) >= maxRemote {
			clear(w.next)
		}
		w.next[k.key] = nextInLine{after.epoch, w.env.mono() - nextLookEvery}
	}
}

func (w *wakeups) expireLocked(now time.Time) {
	for k, until := range w.remote {
		if !until.After(now) {
			delete(w.remote, k)
		}
	}
	if len(w.remote) >= maxRemote {
		clear(w.remote)
	}
}
