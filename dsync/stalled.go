package dsync

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Stall records (driver.Roles.Stalls): when a hold stalls, its holder
// inserts one record that says which claim stalled, whose, and when. The
// record is inserted once and never changed: landing late, twice or after
// the holder's later writes, it still says only that this claim stalled
// (driver.Stall). Nothing in the protocol reads it; statuspage lists it for
// people (dsync status, the status page).

// stalls is statuspage's Reader.Stalls: the records the store keeps,
// nil where it keeps none.
func (c *Client) stalls(ctx context.Context) ([]driver.Stall, error) {
	ss := c.roles.Stalls
	if ss == nil {
		return nil, nil
	}
	// Not c.prepare: a read must leave an empty database empty, as
	// revocations does.
	if c.isClosed() {
		return nil, ErrClosed
	}
	return ss.Stalls(ctx)
}

// recordStall inserts the stall record s, once. s.Since and
// s.LastProgress are readings of the Client's Clock (zero: unknown);
// recordStall stamps At with the store's time (ServerTime().Latest, as
// the stamps of other records are) and turns the two readings into store
// times, At less the time elapsed since each on the Clock. It fills in
// Host and PID where s has none. A record already there (a second try)
// counts as recorded. On a store without driver.Roles.Stalls it records
// nothing and returns nil.
func (c *Client) recordStall(ctx context.Context, s driver.Stall) error {
	ss := c.roles.Stalls
	if ss == nil {
		return nil
	}
	if c.isClosed() {
		return ErrClosed
	}
	now := c.cfg.lease.Clock.Now()
	s.At = c.store.ServerTime().Latest
	storeTime := func(local time.Time) time.Time {
		if local.IsZero() {
			return time.Time{}
		}
		return s.At.Add(-now.Sub(local))
	}
	s.Since, s.LastProgress = storeTime(s.Since), storeTime(s.LastProgress)
	if s.Host == "" {
		s.Host, _ = os.Hostname()
	}
	if s.PID == 0 {
		s.PID = os.Getpid()
	}
	err := ss.RecordStall(ctx, s)
	if errors.Is(err, driver.ErrExists) {
		return nil
	}
	return err
}
