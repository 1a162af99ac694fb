package apisim

import (
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The operator's wait for lingering read claims. docs/operations.md lets
// him empty the collections only while no lock is held, counts a read
// claim that lingers after its last RUnlock (dsync.WithReadLinger) as
// held, and tells him to check `dsync status` rather than wait: a
// suspended process's claim lingers until its session expires. So after
// the operations drained he reads the store as `dsync status` does (the
// claims without an end marker, each held until the later of its own
// expiry and its session's, statuspage.Reader.Queue) and waits until no read
// claim is held. He sends nothing. A claim whose end never lands, of a
// process that keeps its session, would keep him waiting for ever: after
// opWaitSlack past the longest TTL he gives the emptying up, leaving the
// collections as they are.

// opWaitPoll is how often the operator reads the store while he waits;
// opWaitSlack is how long past the longest TTL he waits at most.
const (
	opWaitPoll  = 10 * time.Millisecond
	opWaitSlack = time.Second
)

// heldReads returns the sessions of the read claims the store shows held
// at its time now (claims without an end marker whose expiry, or their
// session's, is later), one per claim.
func (w *world) heldReads() []string {
	now := w.mem.ServerTime().Latest
	var held []string
	w.mem.Unended(func(d driver.Doc) bool {
		if d.Mode != driver.Shared {
			return true
		}
		// Queue's rule: the claim's expiry, unless its session's
		// latest generation was renewed past it.
		exp := d.Exp
		if s, found := w.sess.get(d.Session); found && s.ExpiresAt.After(exp) {
			exp = s.ExpiresAt
		}
		if exp.After(now) {
			held = append(held, d.Session)
		}
		return true
	})
	return held
}

// awaitReads waits until the store shows no read claim held, at most
// maxTTL+opWaitSlack; it reports whether none is, and counts the wait.
func (w *world) awaitReads(maxTTL time.Duration) bool {
	start := time.Now()
	held := w.heldReads()
	if len(held) == 0 {
		return true
	}
	stopped := w.stoppedOwner(held)
	w.tracef("EMPTY waits: %d read claims held (sessions %v), a paused or cut-off owner: %v", len(held), held, stopped)
	for len(held) > 0 && time.Since(start) < maxTTL+opWaitSlack {
		time.Sleep(opWaitPoll)
		held = w.heldReads()
	}
	waited := time.Since(start)
	if len(held) > 0 {
		w.tracef("EMPTY given up after %v: %d read claims held (sessions %v)", waited, len(held), held)
	} else {
		w.tracef("EMPTY waited %v", waited)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fig.EmptyingWaits++
	if stopped {
		w.fig.EmptyingWaitsStopped++
	}
	w.fig.EmptyingWaitMax = max(w.fig.EmptyingWaitMax, waited)
	if waited > maxTTL/3+time.Millisecond {
		// The operator's earlier procedure slept the longest linger (a
		// renew interval, a third of the TTL) and emptied: here, with a
		// read claim held.
		w.fig.EmptyingWaitsPastLinger++
	}
	if len(held) > 0 {
		w.fig.EmptyingsGivenUp++
		return false
	}
	return true
}

// stoppedOwner reports whether one of sessions is of a process paused or
// cut off from the store now (the reviewer's case: its claim lingers
// until its session expires).
func (w *world) stoppedOwner(sessions []string) bool {
	var owners []*proc
	w.mu.Lock()
	for _, p := range w.procs {
		for _, id := range sessions {
			if p.leases[id] != nil {
				owners = append(owners, p)
				break
			}
		}
	}
	w.mu.Unlock()
	for _, p := range owners {
		p.mu.Lock()
		stopped := p.paused != nil || p.down
		p.mu.Unlock()
		if stopped {
			return true
		}
	}
	return false
}
