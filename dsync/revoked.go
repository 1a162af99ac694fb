package dsync

import (
	"context"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Revocations: an operator's revoke (driver.RevokeStore) makes the
// store refuse a session's renewals, which the keeper reads as the
// session gone (renew.go). Only then, off the renewal's path, does the
// process read the revocation record, to say who revoked it and why.

// Revocations returns the revocations recorded in the store: who revoked
// which session, when (store time) and why. It returns nil and no error
// on a store that records none (not a driver.RevokeStore).
func (c *Client) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	rs, ok := c.store.(driver.RevokeStore)
	if !ok {
		return nil, nil
	}
	if err := c.prepare(ctx); err != nil {
		return nil, err
	}
	return rs.Revocations(ctx)
}

// logRevoked logs, at warn, the revocation of session if the store
// records one: called once a renewal found the session gone.
func (c *Client) logRevoked(ctx context.Context, session string) {
	rs, err := c.Revocations(ctx)
	if err != nil {
		c.cfg.logger.Debug("dsync: reading revocations failed", "session", session, "err", err)
		return
	}
	for _, r := range rs {
		if r.Session == session {
			c.cfg.logger.Warn("dsync: session revoked by an operator: its holds are lost",
				"session", session, "by", r.By, "reason", r.Reason, "at", r.At)
			return
		}
	}
}
