package dsync

import (
	"context"
	"time"
)

// Revocations: an operator's revoke (driver.Roles.Revocations) inserts a
// record and writes nothing the process writes (its session documents,
// claims, markers), so it cannot race a renewal. The Client's keeper
// reads the session's record beside its renewals, and retires the session
// when it finds one (dsync/internal/lease, revoke.go, says how often):
// its holds are lost with ErrRevoked, its waiters withdraw.

// A Revocation is an operator's record that a session must end. A session
// is a process's lease; dsync revoke writes the record. The session's holds
// are lost with ErrRevoked once the process reads it.
type Revocation struct {
	Session string    // the session revoked
	By      string    // who revoked it (user@host)
	Reason  string    // why, as the operator said it
	At      time.Time // store time when it was sent
}

// Revocations returns the revocations recorded in the store. Each says who
// revoked which session, when (store time) and why. It returns nil and no
// error on a store that records none. It only reads: on a database nothing
// has used yet it returns none and creates nothing.
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
