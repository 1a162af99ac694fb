package memory

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The record of up-time (driver.UptimeStore): what RenewSessionUp wrote
// to each session document, beside its expiry.

// upDoc is what RenewSessionUp wrote to one session document: the
// up-time record it sent, and the stamp of its write. A document that has
// one was written by the role (it is marked); InsertSessionUp gives one
// without a record or a stamp.
type upDoc struct {
	up    []driver.UpSpan
	stamp time.Time
}

// cloneUptime copies the records of every session document (a nil m gives
// an empty map).
func cloneUptime(m map[string]map[int]upDoc) map[string]map[int]upDoc {
	out := make(map[string]map[int]upDoc, len(m))
	for id, gens := range m {
		out[id] = maps.Clone(gens) // the spans are never changed in place
	}
	return out
}

// RenewSessionUp implements driver.UptimeStore. It raises the expiry as
// RenewSession does, and, in the same step, replaces the document's
// record with up and stamps it with the store's time then (exact: the
// store's clock is this process's).
func (r roles) RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []driver.UpSpan) (time.Time, bool, error) {
	s := r.s
	up = slices.Clone(up) // the caller may reuse its slice
	var (
		stamp time.Time
		found bool
	)
	call := Call{Op: "RenewSessionUp", Write: true, Session: driver.Session{ID: id, Gen: gen, ExpiresAt: expires}}
	if err := s.do(ctx, call, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		var old time.Time
		if old, found = s.sessions[id][gen]; !found {
			return
		}
		if expires.After(old) {
			s.sessions[id][gen] = expires
		}
		stamp = s.ServerTime().Latest
		if s.uptime[id] == nil {
			s.uptime[id] = make(map[int]upDoc)
		}
		s.uptime[id][gen] = upDoc{up: up, stamp: stamp}
	}); err != nil {
		return time.Time{}, false, err
	}
	return stamp, found, nil
}

// InsertSessionUp implements driver.UptimeStore: InsertSession, the
// document marked, in the same step.
func (r roles) InsertSessionUp(ctx context.Context, sess driver.Session) error {
	return r.s.insertSession(ctx, sess, true)
}

// ReadUptime implements driver.UptimeStore: exactly the spans and stamps
// that end at or after since. Every write it reads has landed for good.
func (r roles) ReadUptime(ctx context.Context, since time.Time) (driver.Uptime, error) {
	s := r.s
	var out driver.Uptime
	if err := s.do(ctx, Call{Op: "ReadUptime"}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for id, gens := range s.sessions {
			for gen, exp := range gens {
				d, marked := s.uptime[id][gen]
				if !marked {
					out.Unmarked = out.Unmarked || !exp.Before(since)
					continue
				}
				out.Spans = appendSince(out.Spans, since, d.up...)
				if !d.stamp.IsZero() { // zero: inserted marked, not renewed yet
					out.Spans = appendSince(out.Spans, since, driver.UpSpan{From: d.stamp, To: d.stamp})
				}
			}
		}
	}); err != nil {
		return driver.Uptime{}, err
	}
	return out, nil
}

// appendSince appends to out the spans that end at or after since.
func appendSince(out []driver.UpSpan, since time.Time, spans ...driver.UpSpan) []driver.UpSpan {
	for _, sp := range spans {
		if !sp.To.Before(since) {
			out = append(out, sp)
		}
	}
	return out
}
