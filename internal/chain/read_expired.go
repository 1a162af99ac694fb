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
func (e *Engine) ReadExpired(d Doc, s Session, found bool, earliest time.Time) bool {
	if !e.blockerOf(d).ExpiresAt.Before(earliest) {
		return false
	}
	if e.judgedByExpiry(s, found, earliest) {
		return s.ExpiresAt.Before(earliest)
	}
	return d.TTL <= 0 || e.has(BugAbsentIsDead)
}
