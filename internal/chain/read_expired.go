package chain

import "time"

// ReadExpired reports whether claim d counts as expired at earliest by
// the rule the engine ends claims with (unended, sessionLives), given its
// session as a read found it (s, found), for a reader that writes and
// records nothing (a Client's Queue, an election's Leader): a report, not
// a judgement anything is written on.
//
// Expired: the highest expiry known (d's, the engine's, and the
// session's when it can be judged by it, see judgedByExpiry) is earlier
// than earliest. A session that counts as missing instead (no documents,
// or found expired without its first generation: its collection may have
// been dropped and a late insert brought back an old expiry while its
// owner holds on) is not expired: the engine counts it dead only after a
// run of its reads found it missing for the claim's TTL, which one read
// cannot observe, so the claim still holds until a claimer ends it. A
// claim without a TTL (written by an older dsync) counts missing as
// expired at once, as the engine does.
//
// A session found expired by its expiry stays expired for this engine's
// later reads, whatever expiry they find: its owner stopped relying on it
// at its local deadline, before that expiry, and a renewal sent before
// that deadline and applied after the expiry (a late write, which a
// walker's dead marker makes harmless) raised it past later reads. Read
// again without that memory, the claim came back to life: a reader that
// reported the next claim holding then reported the ended one holding
// again (the integration soak's election: an observer's poll named the
// leader of token N after naming that of N+1).
func (e *Engine) ReadExpired(d Doc, s Session, found bool, earliest time.Time) bool {
	if e.readDeadOf(d.Session) {
		return true
	}
	if !e.blockerOf(d).ExpiresAt.Before(earliest) {
		return false
	}
	if e.judgedByExpiry(s, found, earliest) {
		dead := s.ExpiresAt.Before(earliest)
		if dead {
			e.noteReadDead(d.Session)
		}
		return dead
	}
	return d.TTL <= 0 || e.has(BugAbsentIsDead)
}

// readDeadOf reports whether a read found session expired (ReadExpired).
func (e *Engine) readDeadOf(session string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.readDead[session]
	return ok
}

// noteReadDead records that a read found session expired. Past
// maxExpiries sessions the record starts again empty (a read may then
// see a session brought back by a late renewal alive once more, as
// before this record).
func (e *Engine) noteReadDead(session string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.readDead) >= maxExpiries {
		clear(e.readDead)
	}
	e.readDead[session] = struct{}{}
}
