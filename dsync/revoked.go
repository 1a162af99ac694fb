package dsync

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Revocations: an operator's revoke (driver.RevokeStore) inserts a record
// and writes nothing the process writes (its session documents, claims,
// markers), so it cannot race a renewal. The process learns of it
// itself: while its session has holds or waiters, the keeper reads the
// session's record (one read by _id) every two thirds of a TTL, beside
// the renewals and off their path, and on finding it stops renewing and
// retires the session at once: its holds are lost with ErrRevoked, its
// waiters withdraw. The waiters of other processes go on only once the
// lease has expired in store time, as after a crash.

// Revocations returns the revocations recorded in the store: who revoked
// which session, when (store time) and why. It returns nil and no error
// on a store that records none (not a driver.RevokeStore). It only reads:
// on a database nothing has used yet it returns none and creates nothing.
func (c *Client) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	rs, ok := c.store.(driver.RevokeStore)
	if !ok {
		return nil, nil
	}
	// Not c.prepare: preparing the store creates its collections and
	// indexes, and a read of who was revoked must leave an empty database
	// empty (dsync status, the status page).
	if c.isClosed() {
		return nil, ErrClosed
	}
	return rs.Revocations(ctx)
}

// revokeEvery is how often a session with holds or waiters is checked
// for a revocation: a revoked holder's Lost closes within this, plus a
// read's round trip, of the revoke, however long renewals take (the
// keeper's loop starts a check that falls due while a renewal is under
// way: renew.go). Two thirds of a TTL keeps that within one TTL while the
// read comes back within a third of one (its timeout, as long as the
// default renew interval), with a quarter fewer reads than
// half a TTL took: the read is the one command a busy session adds to
// its renewals (bench/RESULTS.md, Partitioned election: 0.5 per renew
// interval, where half a TTL cost 0.67). Nothing cheaper bounds the
// delay: the renewal modifies one document by _id, which the revoke
// must not write; on FerretDB 1.24 no single command reads two
// documents by _id without scanning the collection; and an event in
// the store's feed (which FerretDB's cursor may skip) or a direct hint
// (UDP) could only make a revoke sooner, never let the read be rarer.
func (k *keeper) revokeEvery() time.Duration { return 2 * k.lease.ttl / 3 }

// revokeCheckDueLocked returns when s is next checked for a revocation,
// and false if the store records none. k.mu must be held.
func (k *keeper) revokeCheckDueLocked(s *session) (time.Time, bool) {
	if _, ok := k.client.store.(driver.RevokeStore); !ok {
		return time.Time{}, false
	}
	return s.revokeChecked.Add(k.revokeEvery()), true
}

// checkRevokedAsync reads s's revocation in a goroutine of its own, so
// that a slow read never delays a renewal; one at a time. The period
// counts from now even if a read is still under way.
func (k *keeper) checkRevokedAsync(s *session) {
	rs, ok := k.client.store.(driver.RevokeStore)
	if !ok {
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
