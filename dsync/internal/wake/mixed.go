package wake

import (
	"context"
	"sync"
	"time"
)

// A waiter without hints in a store where other processes take them.
//
// A process that direct hints reach stops reading the store's stream
// (dsync/hint's pause.go) and publishes through hints only. A process
// without hints announces that it waits through the store's stream
// only, so such an owner never hears of it, and sends no Ended event
// when its claim ends: the end reaches the waiter at its own looks.
// With its stream live, those came at doubling intervals for LostWindow,
// then once a safety poll interval: a handoff from a process that hints
// reach to one without hints took up to the safety poll (15 s; in
// TestElection, 12 of 14 releases by a worker with hints to the worker
// without them took 10-15 s, while every handoff after an expiry took
// under 0.6 s).
//
// So a waiter without hints looks every poll interval, as a waiter with
// hints does that hears no Held hint, when processes that take hints are
// recorded in the store (driver.Roles.Peers); from the start, since the
// looks at doubling intervals cover an event lost, and here none may
// come. It reads their records at most once per peerCheckEvery, sooner
// after finding none (a process without hints that starts beside ones
// with them may read before they recorded themselves: TestElection's
// soak saw one handoff at the safety poll so); where none are recorded,
// it relies on the stream and the safety poll as before.

// peerCheckEvery is how often a waiter without hints reads whether
// processes that take hints are recorded: as often as those processes
// refresh their records (dsync/hint's refreshEvery). After a read that
// found none, the next comes LostWindow later, then at doubling
// intervals up to peerCheckEvery: a process that takes hints recorded
// meanwhile counts within about its age, where waiters behind it wait
// for a safety poll each.
const peerCheckEvery = 30 * time.Second

// peerCheck is what a Client without hints last read of the processes
// that take hints. Its lock guards the last read; it is not held while
// reading.
type peerCheck struct {
	*shared

	mu      sync.Mutex
	any     bool          // some were recorded
	at      time.Duration // when it read (local monotonic)
	every   time.Duration // how long the read holds (peerCheckEvery, or less after none)
	done    bool          // read at least once
	reading bool          // a read is under way
}

// hintsAround reports whether a waiter of this process, which takes no
// hints, must look every poll interval because processes that take
// hints, and may not read its announcements, are recorded in the store.
// It reads their records once the last read is older than it holds
// (peerCheckEvery); a read that fails counts as finding some (the waiter
// polls), and is made again LostWindow later.
func (p *peerCheck) hintsAround(ctx context.Context) bool {
	ps := p.peers()
	if ps == nil {
		return false
	}
	mono := p.env.Mono()
	p.mu.Lock()
	fresh := p.done && mono-p.at < p.every
	if fresh || p.reading {
		defer p.mu.Unlock()
		return p.any
	}
	p.reading = true
	p.mu.Unlock()

	peers, err := ps.Peers(ctx, p.env.Now().Earliest)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reading = false
	p.at, p.done = mono, true
	if err != nil {
		// Poll meanwhile, and read again after LostWindow rather than
		// at every look: a failing store is not read twice per poll.
		p.any, p.every = true, LostWindow
		return true
	}
	if len(peers) == 0 {
		p.every = min(max(2*p.every, LostWindow), peerCheckEvery)
	} else {
		p.every = peerCheckEvery
	}
	p.any = len(peers) > 0
	return p.any
}
