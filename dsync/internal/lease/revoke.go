package lease

import (
	"context"
	"fmt"
	"time"
)

// Revocations: an operator's revoke (driver.Roles.Revocations) inserts a
// record and writes nothing the process writes (its session documents,
// claims, markers), so it cannot race a renewal. The process learns of it
// itself: while its session has holds or waiters, the Keeper reads the
// session's record (one read by _id), beside the renewals and off their
// path: every two thirds of a TTL while the session holds, every two
// TTLs while it only waits, and at once when it begins to hold if the
// last read began more than two thirds of a TTL before (revokeEvery). On
// finding it, it stops renewing and retires the session at once: its
// holds are lost with Errors.Revoked, its waiters withdraw. The waiters
// of other processes go on only once the lease has expired in store time,
// as after a crash.

// revokeEvery is how often a session with holds or waiters is checked
// for a revocation: every two thirds of a TTL while it holds, every two
// TTLs while it only waits.
//
// While it holds, a revoked holder's Lost closes within two thirds of a
// TTL, plus a read's round trip, of the revoke, however long renewals
// take (the Keeper's loop starts a check that falls due while a renewal
// is under way: renew.go). Two thirds of a TTL keeps that within one TTL
// while the read comes back within a third of one (its timeout, as long
// as the default renew interval), with a quarter fewer reads than half a
// TTL took. Nothing cheaper bounds the delay: the renewal modifies one
// document by _id, which the revoke must not write; on FerretDB 1.24 no
// single command reads two documents by _id without scanning the
// collection; and an event in the store's feed (which FerretDB's cursor
// may skip) or a direct hint (UDP) could only make a revoke sooner,
// never let the read be rarer.
//
// A session that only waits has nothing to lose but its place in
// queues: a revoke of it withdraws its claims within two TTLs and a
// read, and costs an idle waiter a third of the reads (the read was a
// quarter of what a hinted idle waiter sent: bench/RESULTS.md, Load of
// waiting processes). The session's first hold brings the holder's
// bound back at once: the period is counted from the last read's start
// (revokeChecked), so a check more than two thirds of a TTL old is due
// the moment the session holds (Join wakes the Keeper's loop), read
// beside the grant and never on its path. A hold granted after a revoke
// is thus lost within two thirds of a TTL and a read of the revoke, or
// within a read of the grant, whichever is later.
func (k *Keeper[H]) revokeEvery(holding bool) time.Duration {
	if holding {
		return 2 * k.p.TTL / 3
	}
	return 2 * k.p.TTL
}

// revokeCheckDueLocked returns when s is next checked for a revocation,
// and false if the store records none. k.mu must be held.
func (k *Keeper[H]) revokeCheckDueLocked(s *Session[H]) (time.Time, bool) {
	if k.env.Revocations == nil {
		return time.Time{}, false
	}
	// Every hold counted belongs to the current session: retiring a
	// session stops counting its holds (retireLocked).
	return s.revokeChecked.Add(k.revokeEvery(len(k.holds) > 0)), true
}

// checkRevokedAsync reads s's revocation in a goroutine of its own, so
// that a slow read never delays a renewal; one at a time. The period
// counts from now even if a read is still under way.
func (k *Keeper[H]) checkRevokedAsync(s *Session[H]) {
	rs := k.env.Revocations
	if rs == nil {
		return
	}
	k.mu.Lock()
	s.revokeChecked = k.p.Clock.Now()
	if s.retired || s.revokeReading {
		k.mu.Unlock()
		return
	}
	s.revokeReading = true
	k.mu.Unlock()
	k.env.Go(func() {
		// A third of a TTL: a read still under way when the next check
		// falls due would skip that check (revokeReading).
		ctx, cancel := context.WithTimeout(s.ctx, k.p.TTL/3)
		defer cancel()
		r, found, err := rs.Revoked(ctx, s.id)
		k.mu.Lock()
		s.revokeReading = false
		k.mu.Unlock()
		switch {
		case err != nil:
			// Read again at the next period; meanwhile the renewals
			// decide, as ever.
			if s.ctx.Err() == nil {
				k.env.Logger.Debug("dsync: reading the session's revocation failed", "session", s.id, "err", err)
			}
		case found:
			k.env.Logger.Warn("dsync: session revoked by an operator: its holds are lost, its renewals stopped",
				"session", s.id, "by", r.By, "reason", r.Reason, "at", r.At)
			k.Retire(s, fmt.Errorf("%w: %w by %s at %s: %s", k.env.Errors.Lost, k.env.Errors.Revoked,
				r.By, r.At.UTC().Format(time.RFC3339), r.Reason))
		}
	})
}
