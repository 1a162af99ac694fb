package dsync

import (
	"context"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Revocations: an operator's revoke (driver.Roles.Revocations) inserts a
// record and writes nothing the process writes (its session documents,
// claims, markers), so it cannot race a renewal. The Client's keeper
// reads the session's record beside its renewals, and retires the session
// when it finds one (dsync/internal/lease, revoke.go, says how often):
// its holds are lost with ErrRevoked, its waiters withdraw.

// revocations is statuspage's Reader.Revocations: the records the store
// keeps, nil where it keeps none.
func (c *Client) revocations(ctx context.Context) ([]driver.Revocation, error) {
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
	return rs.Revocations(ctx)
}
