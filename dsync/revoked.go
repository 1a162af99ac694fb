package dsync

import (
	"context"
	"fmt"
	"time"
)

// Revocations: an operator's revoke (driver.Roles.Revocations) inserts a
// record and writes nothing the process writes (its session documents,
// claims, markers), so it cannot race a renewal. The process learns of it
// itself: while its session has holds or waiters, the keeper reads the
// session's record (one read by _id), beside the renewals and off their
// path: every two thirds of a TTL while the session holds, every two
// TTLs while it only waits, and at once when it begins to hold if the
// last read began more than two thirds of a TTL before (revokeEvery). On
// finding it, it stops renewing and retires the session at once: its
// holds are lost with ErrRevoked, its waiters withdraw. The waiters of
// other processes go on only once the lease has expired in store time,
// as after a crash.

// A Revocation is an operator's record that a session (a process's
// lease) must end (dsync revoke writes it): its holds are lost with
// ErrRevoked once the process reads it.
type Revocation struct {
	Session string    // the session revoked
	By      string    // who revoked it (user@host)
	Reason  string    // why, as the operator said it
	At      time.Time // store time when it was sent
}

// Revocations returns the revocations recorded in the store: who revoked
// which session, when (store time) and why. It returns nil and no error
// on a store that records none. It only reads: on a database nothing has
// used yet it returns none and creates nothing.
func (c *Client) Revocations(ctx context.Context) ([]Revocation, error) {
	rs := c.roles.Revocations
	if rs == nil {
		return nil, nil
	}
	// Not c.prepare: preparing the store creates its collections and
	// indexes, and a read of who was revoked must leave an empty database
	// empty (dsync status, the status page).
	if c.isClosed() {
		return nil, ErrClosed
	}
	stored, err := rs.Revocations(ctx)
	if err != nil || stored == nil {
		return nil, err
	}
	out := make([]Revocation, len(stored))
	for i, r := range stored {
		out[i] = Revocation(r)
	}
	return out, nil
}

// revokeEvery is how often a session with holds or waiters is checked
// for a revocation: every two thirds of a TTL while it holds, every two
// TTLs while it only waits.
//
// While it holds, a revoked holder's Lost closes within two thirds of a
// TTL, plus a read's round trip, of the revoke, however long renewals
// take (the keeper's loop starts a check that falls due while a renewal
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
// the moment the session holds (join wakes the keeper's loop), read
// beside the grant and never on its path. A hold granted after a revoke
// is thus lost within two thirds of a TTL and a read of the revoke, or
// within a read of the grant, whichever is later.
func (k *keeper) revokeEvery(holding bool) time.Duration {
	if holding {
		return 2 * k.lease.ttl / 3
	}
	return 2 * k.lease.ttl
}

// revokeCheckDueLocked returns when s is next checked for a revocation,
// and false if the store records none. k.mu must be held.
func (k *keeper) revokeCheckDueLocked(s *session) (time.Time, bool) {
	if k.client.roles.Revocations == nil {
		return time.Time{}, false
	}
	// Every hold counted belongs to the current session: retiring a
	// session stops counting its holds (retireLocked).
	return s.revokeChecked.Add(k.revokeEvery(len(k.holds) > 0)), true
}

// checkRevokedAsync reads s's revocation in a goroutine of its own, so
// that a slow read never delays a renewal; one at a time. The period
// counts from now even if a read is still under way.
func (k *keeper) checkRevokedAsync(s *session) {
	rs := k.client.roles.Revocations
	if rs == nil {
		return
	}
	k.mu.Lock()
	s.revokeChecked = k.lease.clock.Now()
	if s.retired || s.revokeReading {
		k.mu.Unlock()
		return
	}
	s.revokeReading = true
	k.mu.Unlock()
	k.client.running.Add(1)
	go func() {
		defer k.client.running.Done()
		// A third of a TTL: a read still under way when the next check
		// falls due would skip that check (revokeReading).
		ctx, cancel := context.WithTimeout(s.ctx, k.lease.ttl/3)
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
				k.client.cfg.logger.Debug("dsync: reading the session's revocation failed", "session", s.id, "err", err)
			}
		case found:
			k.client.cfg.logger.Warn("dsync: session revoked by an operator: its holds are lost, its renewals stopped",
				"session", s.id, "by", r.By, "reason", r.Reason, "at", r.At)
			k.retire(s, fmt.Errorf("%w: %w by %s at %s: %s", ErrLost, ErrRevoked,
				r.By, r.At.UTC().Format(time.RFC3339), r.Reason))
		}
	}()
}
