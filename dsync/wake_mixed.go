package dsync

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A waiter without hints in a store where other processes take them.
//
// A process that direct hints reach stops reading the store's stream
// (dsync/hint's pause.go) and publishes through hints only. A process
// without hints announces that it waits through the store's stream
// only, so such an owner never hears of it, and sends no Ended event
// when its claim ends: the end reaches the waiter at its own looks.
// With its stream live, those came at doubling intervals for lostWindow,
// then once a safety poll interval: a handoff from a process that hints
// reach to one without hints took up to the safety poll (15 s; in
// TestElection, 12 of 14 releases by a worker with hints to the worker
// without them took 10-15 s, while every handoff after an expiry took
// under 0.6 s).
//
// So a waiter without hints looks every poll interval, as a waiter with
// hints does that hears no Held hint, when processes that take hints are
// recorded in the store (driver.PeerStore); from the start, since the
// looks at doubling intervals cover an event lost, and here none may
// come. It reads their records at most once per peerCheckEvery, sooner
// after finding none (a process without hints that starts beside ones
// with them may read before they recorded themselves: TestElection's
// soak saw one handoff at the safety poll so); where none are recorded,
// it relies on the stream and the safety poll as before.

// peerCheckEvery is how often a waiter without hints reads whether
// processes that take hints are recorded: as often as those processes
// refresh their records (dsync/hint's refreshEvery). After a read that
// found none, the next comes lostWindow later, then at doubling
// intervals up to peerCheckEvery: a process that takes hints recorded
// meanwhile counts within about its age, where waiters behind it wait
// for a safety poll each.
const peerCheckEvery = 30 * time.Second

// peerCheck is what a Client without hints last read of the processes
// that take hints: whether any was recorded, and when it read (local
// monotonic). Guarded by wakeups.mu.
type peerCheck struct {
	any     bool
	at      time.Duration
	every   time.Duration // how long the read holds (peerCheckEvery, or less after none)
	done    bool          // read at least once
	reading bool          // a read is under way
}

// hintsAround reports whether a waiter of this process, which takes no
// hints, must look every poll interval because processes that take
// hints, and may not read its announcements, are recorded in the store.
// It reads their records once the last read is older than it holds
// (peerCheckEvery); a read that fails counts as finding some (the waiter
// polls), and is made again lostWindow later.
func (w *wakeups) hintsAround(ctx context.Context) bool {
	if w.env.peers == nil {
		return false
	}
	mono := w.env.mono()
	w.mu.Lock()
	pc := w.peerCheck
	fresh := pc.done && mono-pc.at < pc.every
	if fresh || pc.reading {
		w.mu.Unlock()
		return pc.any
	}
	w.peerCheck.reading = true
	w.mu.Unlock()

	peers, err := w.env.peers.Peers(ctx, w.env.now().Earliest)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.peerCheck.reading = false
	if err != nil {
		// Poll meanwhile, and read again after lostWindow rather than
		// at every look: a failing store is not read twice per poll.
		w.peerCheck = peerCheck{any: true, at: mono, every: lostWindow, done: true}
		return true
	}
	every := peerCheckEvery
	if len(peers) == 0 {
		every = min(max(2*pc.every, lostWindow), peerCheckEvery)
	}
	w.peerCheck = peerCheck{any: len(peers) > 0, at: mono, every: every, done: true}
	return w.peerCheck.any
}

// peersOf returns the store's peer records for a Client that takes no
// hints (direct false), or nil: a Client with hints relies on Held
// hints instead, and a store that is no driver.PeerStore carries none.
func peersOf(store driver.Store, direct bool) driver.PeerStore {
	ps, ok := store.(driver.PeerStore)
	if direct || !ok {
		return nil
	}
	return ps
}
