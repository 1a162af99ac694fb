package memory

import (
	"context"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Outage records: the first record of each suspension (session and
// Suspended), never changed (driver.OutageStore). The store keeps them
// until Reset.

// outageID is an outage record's identity: its session and when it was
// suspended.
type outageID struct {
	session   string
	suspended int64 // UnixNano
}

// RecordOutage implements driver.OutageStore.
func (r roles) RecordOutage(ctx context.Context, o driver.Outage) error {
	var exists bool
	if err := r.s.do(ctx, Call{Op: "RecordOutage", Write: true, Session: driver.Session{ID: o.Session}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		id := outageID{o.Session, o.Suspended.UnixNano()}
		if _, exists = r.s.outages[id]; exists {
			return
		}
		if r.s.outages == nil {
			r.s.outages = make(map[outageID]driver.Outage)
		}
		r.s.outages[id] = o
	}); err != nil {
		return err
	}
	if exists {
		return driver.ErrExists
	}
	return nil
}

// ListOutages implements driver.OutageStore. The records come in the
// order of their At.
func (r roles) ListOutages(ctx context.Context, since time.Time) ([]driver.Outage, error) {
	var out []driver.Outage
	if err := r.s.do(ctx, Call{Op: "ListOutages"}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		for _, o := range r.s.outages {
			if !o.At.Before(since) {
				out = append(out, o)
			}
		}
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b driver.Outage) int { return a.At.Compare(b.At) })
	return out, nil
}
