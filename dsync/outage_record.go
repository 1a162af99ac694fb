package dsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Outage records (driver.Roles.Outages): when a resume keeps a session's
// holds across an outage of the store, the session's process inserts one
// record that says whose session rode the outage through, when it was
// suspended and resumed, and how many holds it kept. The record is
// inserted once and never changed: landing late, twice or after the
// process's later writes, it still says only that this suspension was
// ridden through (driver.Outage). Nothing in the protocol reads it;
// statuspage lists it for people (dsync status, the status page).

// recordOutageLater records, in the background, that session's
// suspension at suspended was ridden through with holds kept, resumed at
// resumed (both readings of the Client's Clock), within the release
// timeout; a failure is reported to the logger and the error handler. A
// session that kept no hold (its process only waited) records nothing:
// after an outage every process resumes, and the record is for the holds.
func (c *Client) recordOutageLater(session string, suspended, resumed time.Time, holds int) {
	if c.roles.Outages == nil || holds == 0 {
		return
	}
	c.inBackground(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.releaseTimeout())
		defer cancel()
		err := c.recordOutage(ctx, driver.Outage{Session: session, Suspended: suspended, Resumed: resumed, Holds: holds})
		if err != nil && !errors.Is(err, ErrClosed) {
			err = fmt.Errorf("dsync: record the outage ridden through by session %s: %w", session, err)
			c.cfg.logger.Warn("dsync", "err", err)
			if c.cfg.onError != nil {
				c.cfg.onError(err)
			}
		}
	})
}

// recordOutage inserts the outage record o, once. o.Suspended and
// o.Resumed are readings of the Client's Clock; recordOutage stamps At
// with the store's time (ServerTime().Latest, as the stamps of other
// records are) and turns the two readings into store times, At less the
// time elapsed since each on the Clock. It fills in Host and PID. A
// record already there (a second try) counts as recorded. On a store
// without driver.Roles.Outages it records nothing and returns nil.
func (c *Client) recordOutage(ctx context.Context, o driver.Outage) error {
	rec := c.roles.Outages
	if rec == nil {
		return nil
	}
	if c.isClosed() {
		return ErrClosed
	}
	now := c.cfg.lease.Clock.Now()
	o.At = c.store.ServerTime().Latest
	o.Suspended, o.Resumed = o.At.Add(-now.Sub(o.Suspended)), o.At.Add(-now.Sub(o.Resumed))
	o.Host, _ = os.Hostname()
	o.PID = os.Getpid()
	err := rec.RecordOutage(ctx, o)
	if errors.Is(err, driver.ErrExists) {
		return nil
	}
	return err
}
