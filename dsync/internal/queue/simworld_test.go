package queue_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/integration/history"
)

// scheduleFaults draws the run's faults from the seed.
func (s *sim) scheduleFaults() {
	rng := s.rng
	randomTime := func() time.Duration { return time.Second + time.Duration(rng.Int64N(int64(simLength))) }
	for _, o := range s.owners {
		// A crash: the process is gone, its requests in flight still land.
		if rng.Float64() < 0.3 {
			s.at(randomTime(), func() { o.crashed = true })
		}
		// Pauses (a GC pause or SIGSTOP: nothing runs, timers included).
		for range rng.IntN(3) {
			d := time.Duration(rng.Int64N(int64(2 * simTTL)))
			s.at(randomTime(), func() { s.pause(o, d) })
		}
		// Suspends, some ending shortly before the owner's deadline.
		for range rng.IntN(3) {
			d := time.Duration(rng.Int64N(int64(2 * simTTL)))
			s.at(randomTime(), func() { s.suspend(o, d) })
		}
		for range rng.IntN(3) {
			s.at(randomTime(), func() { s.suspendNearDeadline(o) })
		}
	}
	// Failovers: the writes move to a member whose clock is within the
	// member skew.
	for range 1 + rng.IntN(6) {
		s.at(randomTime(), func() {
			s.server.off = time.Duration(rng.Int64N(int64(simSkew))) - simSkew/2
			s.stats.failovers++
		})
	}
	// Backups, and resets: the store emptied, its sessions dropped, or a
	// backup restored.
	for at := time.Second + time.Duration(rng.Int64N(int64(time.Second))); at < simLength; at += time.Second + time.Duration(rng.Int64N(int64(2*time.Second))) {
		s.at(at, s.server.snapshot)
	}
	for range rng.IntN(5) {
		kind := []string{"empty", "restore"}[rng.IntN(2)]
		s.at(randomTime(), func() { s.reset(kind, 0) })
	}
	// The sessions collection emptied at any moment, locks held or not,
	// but at least three TTLs after the last time (see queue's noteAbsent):
	// closer, a waiter can take a session that came back and went again
	// unseen for dead.
	for range rng.IntN(3) {
		if at := randomTime(); s.dropAllowed(at) {
			s.drops = append(s.drops, at)
			s.at(at, s.dropSessions)
		}
	}
}

// dropAllowed reports whether the sessions may be dropped at at: at least
// three TTLs from every other drop scheduled.
func (s *sim) dropAllowed(at time.Duration) bool {
	return !slices.ContainsFunc(s.drops, func(d time.Duration) bool { return (at - d).Abs() < 3*simTTL })
}

// simHeld is the heldSession fault, on the seeds that draw it (with a
// stream of its own, so that the others run as they did before it): the
// first insert of a later generation of a session (sent when a renewal's
// outcome was unknown) fails at once for its sender (a connection reset)
// but is held back in the network until, one to four TTLs later, a hold
// of that session's owner is valid; then the owner is paused (for a TTL
// and more), the sessions are dropped, and the insert lands just after.
// (Had its sender waited for its timeout, the next renewal would have
// come too late to keep the session.) It brings the session back with its old
// expiry, past or soon past, while the owner holds on renewals confirmed
// since, whose documents went with the drop: a waiter must not take the
// session for expired (queue's judgedByExpiry), only for missing.
type simHeld struct {
	rng *rand.Rand
	// holding: an insert is held back; done: the fault has dropped the
	// sessions. An insert whose owner stops holding (or crashes) before
	// the fault can drop lands, and the next insert is taken.
	holding, done bool
}

// holdSession reports whether the heldSession fault takes the insert of
// sess by o; it then applies the insert (apply) when the fault says.
func (s *sim) holdSession(o *owner, sess queue.Session, apply func()) bool {
	h := s.held
	if h == nil || h.holding || h.done || sess.Gen == 0 || o.crashed {
		return false
	}
	h.holding = true
	s.server.inflight++
	s.tracef("HOLD %s's insert of session %s gen %d", o.name, sess.ID, sess.Gen)
	land := func() {
		h.holding = false
		s.server.inflight--
		s.stats.late++
		apply()
	}
	from, until := s.now+simTTL, s.now+4*simTTL
	var try func()
	try = func() {
		switch {
		case o.crashed || s.now >= until || !o.holdingIn(sess.ID) && o.sess != nil && o.sess.id != sess.ID:
			land()
		case o.holdingIn(sess.ID) && s.dropAllowed(s.now+time.Millisecond):
			h.done = true
			s.pause(o, simTTL+time.Duration(h.rng.Int64N(int64(simTTL/2))))
			drop := s.now + time.Millisecond
			s.drops = append(s.drops, drop)
			s.at(drop, func() {
				s.dropSessions()
				s.stats.heldSessions++
			})
			s.at(drop+time.Millisecond, land)
		default:
			s.at(s.now+10*time.Millisecond, try)
		}
	}
	s.at(from+time.Duration(h.rng.Int64N(int64(simTTL))), try)
	return true
}

// dropSessions empties the sessions collection, whatever is held: a
// holder finds its session gone at its next renewal and loses its holds;
// a waiter takes a claim whose session is missing for dead only after
// the claim's TTL (see queue's ended).
func (s *sim) dropSessions() {
	clear(s.server.sessions)
	clear(s.server.up)
	s.server.dropped = s.now
	s.stats.sessionDrops++
	s.tracef("DROP SESSIONS")
}

func (s *sim) pause(o *owner, d time.Duration) {
	from := s.now
	o.pausedUntil = max(o.pausedUntil, from+d)
	s.log = append(s.log, history.Event{Ev: history.EvFault, Kind: "sigstop", Worker: o.name, PID: o.pid, T: int64(from), End: int64(from + d)})
}

func (s *sim) suspend(o *owner, d time.Duration) {
	from := s.now
	o.suspendedUntil = max(o.suspendedUntil, from+d)
	o.suspends = append(o.suspends, span{from, from + d})
	s.stats.suspends++
	s.log = append(s.log, history.Event{Ev: history.EvFault, Kind: "suspend", Worker: o.name, PID: o.pid, T: int64(from), End: int64(from + d)})
}

// suspendNearDeadline suspends o until 0–150 ms before its session's
// deadline, if it has a live session.
func (s *sim) suspendNearDeadline(o *owner) {
	ss := o.sess
	if o.crashed || ss == nil || ss.lease.Retired() {
		return
	}
	d := o.deadline(ss) - s.now - time.Duration(s.rng.Int64N(int64(150*time.Millisecond)))
	if d <= 0 {
		return
	}
	s.stats.nearDeadline++
	s.suspend(o, d)
}

// reset empties the store or restores its backup, at a moment when, as
// far as the store shows, no lock is held or awaited (every claim has
// ended, or its session has expired: what `dsync status` shows an
// operator), no running owner has a claim in flight or believes it
// holds, and no delete is half applied
// (FerretDB deletes by ID what it read before: a delete torn across the
// reset could delete a document of the new history that reuses an ID). A
// restore also waits until no request is in flight, and restarts every
// owner (a new process, which knows nothing), as with the processes
// stopped while the backup is restored: a prune sent after the backup was taken
// would delete restored documents wherever it lands, and a restore can
// raise a key's floor, which a floor read cached from before would miss.
// Emptying keeps every cache. It tries again a little later otherwise.
func (s *sim) reset(kind string, tries int) {
	if kind == "restore" && s.server.backup == nil {
		return
	}
	if !s.resetReady(kind) {
		if tries < 500 {
			s.at(s.now+time.Duration(1+s.rng.IntN(40))*time.Millisecond, func() { s.reset(kind, tries+1) })
		}
		return
	}
	sv := s.server
	switch kind {
	case "empty":
		sv.store.Reset()
		clear(sv.sessions)
		clear(sv.up)
		s.stats.resets++
		defer sv.releaseStalled()
	case "restore":
		sv.store.Restore(sv.backup.store)
		sv.sessions = make(map[string]map[int]time.Time, len(sv.backup.sessions))
		for id, gens := range sv.backup.sessions {
			sv.sessions[id] = make(map[int]time.Time, len(gens))
			for g, e := range gens {
				sv.sessions[id][g] = e
			}
		}
		sv.up = cloneUp(sv.backup.up)
		s.stats.restores++
		// The processes were stopped for the restore: each starts again,
		// knowing nothing.
		for _, o := range slices.Clone(s.owners) {
			if !o.crashed {
				o.crashed = true
				s.addOwner(o.pid <= 2)
			}
		}
	}
	sv.lastReset = s.now
	s.tracef("RESET %s", kind)
	s.log = append(s.log, history.Event{Ev: history.EvReset, Kind: kind, T: int64(s.now)})
}

// resetReady reports whether a reset of kind may come now (see reset).
func (s *sim) resetReady(kind string) bool {
	ready := s.server.deleting == 0 && !s.server.liveClaims() && (kind != "restore" || s.server.inflight == 0)
	for _, o := range s.owners {
		// A claim in flight may be about to hold (its owner's reads came
		// before the reset, their replies after it) even when the store
		// shows it dead (its session's documents dropped).
		if o.holding() || !o.crashed && o.claims > 0 {
			ready = false
		}
	}
	return ready
}

// checkStorms finds sessions whose renewals stormed: more than
// simMaxRenewals within a TTL, or renewals that went on after one was
// confirmed past the deadline (a lease must end there).
func (s *sim) checkStorms() {
	for _, o := range s.owners {
		for _, ss := range o.sessions {
			if ss.after > 0 {
				s.storms = append(s.storms, fmt.Sprintf("%s session %s: %d renewals sent after one was confirmed past its deadline (at %v)", o.name, ss.id, ss.after, ss.over))
			}
			r := slices.Clone(ss.renewals)
			for i := range r {
				j, _ := slices.BinarySearch(r, r[i]+simTTL)
				if j-i > simMaxRenewals {
					s.storms = append(s.storms, fmt.Sprintf("%s session %s: %d renewals within %v from %v", o.name, ss.id, j-i, simTTL, r[i]))
					break
				}
			}
		}
	}
}
