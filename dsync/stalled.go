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
// (driver.Stall). Nothing in the protocol reads it; Stalls lists it for
// people (dsync status, the status page).

// A Stall is the record that a hold stalled. Its work reported no progress
// within its progress deadline, and the holder gave the hold up.
type Stall struct {
	Key     string // the key as stored: a namespaced key begins with "dsync:"
	Token   uint64 // the claim's fencing token
	Owner   string // the Mutex (or candidate) that claimed
	Session string // the holder's session
	Nonce   string // the claim's
	Host    string // the holding process
	PID     int
	// Since is when the hold began; LastProgress when its work last
	// reported progress. Both are store times counted back from At by the
	// holder's own clock, so as uncertain as At.
	Since        time.Time
	LastProgress time.Time
	At           time.Time // store time when the record was sent
}

// Stalls returns the stall records kept in the store: which holds
// stalled, whose and when. It returns nil and no error on a store that
// records none. It only reads: on a database nothing has used yet it
// returns none and creates nothing. A store may delete a record once it
// is old (dsyncmongo keeps one for a day).
func (c *Client) Stalls(ctx context.Context) ([]Stall, error) {
	ss := c.roles.Stalls
	if ss == nil {
		return nil, nil
	}
	// Not c.prepare: a read must leave an empty database empty, as
	// Revocations does.
	if c.isClosed() {
		return nil, ErrClosed
	}
	stored, err := ss.Stalls(ctx)
	if err != nil || stored == nil {
		return nil, err
	}
	out := make([]Stall, len(stored))
	for i, s := range stored {
		out[i] = Stall(s)
	}
	return out, nil
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
