package apisim

import (
	"context"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The store's record of up-time (driver.UptimeStore) as the processes of
// an outage run (Options.Outages) reach it: through their faulty network,
// on the world's sessions collection (sessions.go), so that an emptying of
// that collection takes the record with it. The oracle hears every stamp
// the store applies (world.stamped), whether or not its reply comes back.

// upDoc is what RenewSessionUp wrote to one session document: the record
// it sent and the stamp of its write.
type upDoc struct {
	up    []driver.UpSpan
	stamp time.Time
}

// renewUp raises the expiry of a generation as renew does and, in the
// same step, replaces its record with up and stamps it with now (the
// store's time: the fake clock); it reports the stamp and whether the
// generation exists.
func (s *sessions) renewUp(id string, gen int, expires time.Time, up []driver.UpSpan) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.gens[id][gen]
	if !ok {
		return time.Time{}, false
	}
	if expires.After(old) {
		s.gens[id][gen] = expires
	}
	stamp := time.Now()
	if s.ups[id] == nil {
		s.ups[id] = make(map[int]upDoc)
	}
	s.ups[id][gen] = upDoc{up: slices.Clone(up), stamp: stamp}
	return stamp, true
}

// readUp is ReadUptime's read of the collection, at one instant.
func (s *sessions) readUp(since time.Time) driver.Uptime {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out driver.Uptime
	keep := func(sp driver.UpSpan) {
		if !sp.To.Before(since) {
			out.Spans = append(out.Spans, sp)
		}
	}
	for id, gens := range s.gens {
		for gen, exp := range gens {
			d, marked := s.ups[id][gen]
			if !marked {
				out.Unmarked = out.Unmarked || !exp.Before(since)
				continue
			}
			for _, sp := range d.up {
				keep(sp)
			}
			if !d.stamp.IsZero() { // zero: inserted marked, not renewed yet
				keep(driver.UpSpan{From: d.stamp, To: d.stamp})
			}
		}
	}
	return out
}

// RenewSessionUp implements driver.UptimeStore.
func (s *procStore) RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []driver.UpSpan) (time.Time, bool, error) {
	var (
		stamp time.Time
		found bool
	)
	err := s.request(ctx, "renew-session-up", func(plan) {
		stamp, found = s.p.w.sess.renewUp(id, gen, expires, up)
		s.p.w.tracef("%s renew-session-up %s gen %d exp %s: %v", s.name(), id, gen, expires.Format(tf), found)
		if found {
			s.p.w.stamped(s.p, id, gen, stamp, expires)
		}
	}, func(sent time.Time) {
		if found {
			s.p.w.confirmed(s.p, id, sent, expires)
		}
	})
	if err != nil {
		return time.Time{}, false, err
	}
	return stamp, found, nil
}

// InsertSessionUp implements driver.UptimeStore.
func (s *procStore) InsertSessionUp(ctx context.Context, sess driver.Session) error {
	return s.insertSession(ctx, sess, true)
}

// ReadUptime implements driver.UptimeStore.
func (s *procStore) ReadUptime(ctx context.Context, since time.Time) (driver.Uptime, error) {
	var out driver.Uptime
	if err := s.request(ctx, "read-uptime", func(plan) {
		out = s.p.w.sess.readUp(since)
		s.p.w.tracef("%s read-uptime since %s: %d spans unmarked %v", s.name(), since.Format(tf), len(out.Spans), out.Unmarked)
	}, nil); err != nil {
		return driver.Uptime{}, err
	}
	return out, nil
}

// Stamp is one renewal the store applied through RenewSessionUp, as the
// oracle heard of it: the store's time, the session document, the
// process that sent it and the expiry it carried.
type Stamp struct {
	At      time.Time
	Session string
	Gen     int
	Proc    int
	Expires time.Time
}

// Open is a session document inserted (InsertSession, InsertSessionUp).
type Open struct {
	At      time.Time
	Session string
	Gen     int
	Expires time.Time
}

// stamped tells the oracle that the store applied a renewal of session
// id of p at at, carrying expires.
func (w *world) stamped(p *proc, id string, gen int, at, expires time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hist.Stamps = append(w.hist.Stamps, Stamp{At: at, Session: id, Gen: gen, Proc: p.id, Expires: expires})
}

// opened tells the oracle that a session document was inserted (in an
// outage run).
func (w *world) opened(sess driver.Session) {
	if w.grace == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hist.Opens = append(w.hist.Opens, Open{At: time.Now(), Session: sess.ID, Gen: sess.Gen, Expires: sess.ExpiresAt})
}
