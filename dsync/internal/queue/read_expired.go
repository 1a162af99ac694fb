package queue

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
// With remember set (earliest is by the clock that orders the writes, the
// one walks judge by), a session found expired by its expiry stays
// expired for this engine's later reads, whatever expiry they find,
// until two of the claim's TTLs have passed the highest expiry such a
// read reported (d's or the session's, as statuspage.ClaimInfo.ExpiresAt, whichever
// key it read: a read that reports the claim expired from this memory,
// with an expiry a late renewal raised, promises as much as the first).
// Its owner stopped relying on it at its local deadline, before that
// expiry, and a renewal sent before that deadline and applied after the
// expiry (a late write, which a walker's dead marker makes harmless) can
// raise it by less than a TTL. Read again without that memory, the claim
// came back to life: a reader that reported the next claim holding then
// reported the ended one holding again (the integration soak's election:
// an observer's poll named the leader of token N after naming that of
// N+1). Judged by another clock (a read before the Client's first claim,
// on MongoDB hello's, behind a mongos the router's), a report is only
// as good as that clock, and is not remembered: an error of it would
// last.
//
// A claim with an outage grace, on a store that keeps the record of
// up-time, is expired only if ev, read before the session
// (ReadEvidence), also proves its session dead by the outage rule
// (judge_outage.go); only such a verdict is remembered, and for the grace
// longer (readDeadFor): its owner may have suspended its session at its
// deadline (resume.go), and renews it, raising its expiry, until its
// resume check finds it dead (as it must, once a read found it so:
// doc_outage.go, O4) or it gives up, a grace and a TTL past that deadline.
func (j *judge) ReadExpired(d Doc, s Session, found bool, earliest time.Time, remember bool, ev Evidence) bool {
	remember = j.remembers(remember)
	reported := d.Exp
	if found && s.ExpiresAt.After(reported) {
		reported = s.ExpiresAt
	}
	if j.readDeadAt(d.Session, earliest) {
		if remember && d.TTL > 0 {
			j.noteReadDead(d.Session, reported.Add(j.readDeadFor(d)), earliest)
		}
		return true
	}
	known := j.blockerOf(d).ExpiresAt
	if !known.Before(earliest) {
		return false
	}
	if j.judgedByExpiry(s, found, earliest) {
		dead := s.ExpiresAt.Before(earliest) && j.readDeadByRecord(d, latest(known, s.ExpiresAt), ev)
		if dead && remember && d.TTL > 0 {
			j.noteReadDead(d.Session, reported.Add(j.readDeadFor(d)), earliest)
		}
		return dead
	}
	return j.deadOnceMissing(d)
}

// readDeadAt reports whether a read found session expired, and a late
// write may still make it look alive at earliest (ReadExpired).
func (j *judge) readDeadAt(session string, earliest time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	until, ok := j.readDead[session]
	if ok && !earliest.Before(until) {
		delete(j.readDead, session)
		return false
	}
	return ok
}

// noteReadDead records that a read found session expired, until until,
// or later if a read already recorded later. A full record is rid of the entries past their time first, and
// emptied if that is not enough (a read may then see a session brought
// back by a late renewal alive once more, as before this record).
func (j *judge) noteReadDead(session string, until, earliest time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.readDead) >= maxExpiries {
		for s, u := range j.readDead {
			if !earliest.Before(u) {
				delete(j.readDead, s)
			}
		}
		if len(j.readDead) >= maxExpiries {
			clear(j.readDead)
		}
	}
	if u, ok := j.readDead[session]; !ok || until.After(u) {
		j.readDead[session] = until
	}
}

// readDeadFor is how long past the highest expiry reported a read's
// verdict that claim d expired is remembered (ReadExpired): two TTLs,
// and the grace too for a claim judged by the outage rule.
func (j *judge) readDeadFor(d Doc) time.Duration {
	if _, on := j.outageRule(d); on {
		return 2*d.TTL + min(d.Grace, MaxGrace)
	}
	return 2 * d.TTL
}
