package memory

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Sessions: each generation's expiry, by session.

// InsertSession implements driver.Store.
func (s *Store) InsertSession(ctx context.Context, sess driver.Session) error {
	return s.insertSession(ctx, sess, false)
}

// insertSession inserts sess's document, marked as written through the
// record of up-time (with an empty record, uptime.go) if marked; a
// hook sees either as an "InsertSession".
func (s *Store) insertSession(ctx context.Context, sess driver.Session, marked bool) error {
	var exists bool
	if err := s.do(ctx, Call{Op: "InsertSession", Write: true, Session: sess}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		gens := s.sessions[sess.ID]
		if gens == nil {
			gens = make(map[int]time.Time)
			s.sessions[sess.ID] = gens
		}
		if _, exists = gens[sess.Gen]; exists {
			return
		}
		gens[sess.Gen] = sess.ExpiresAt
		if marked {
			if s.uptime[sess.ID] == nil {
				s.uptime[sess.ID] = make(map[int]upDoc)
			}
			s.uptime[sess.ID][sess.Gen] = upDoc{}
		}
	}); err != nil {
		return err
	}
	if exists {
		return driver.ErrExists
	}
	return nil
}

// RenewSession implements driver.Store.
func (s *Store) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	var found bool
	if err := s.do(ctx, Call{Op: "RenewSession", Write: true, Session: driver.Session{ID: id, Gen: gen, ExpiresAt: expires}}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		var old time.Time
		if old, found = s.sessions[id][gen]; found && expires.After(old) {
			s.sessions[id][gen] = expires
		}
	}); err != nil {
		return false, err
	}
	return found, nil
}

// GetSession implements driver.Store.
func (s *Store) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	var (
		sess  driver.Session
		found bool
	)
	if err := s.do(ctx, Call{Op: "GetSession", Session: driver.Session{ID: id}}, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		sess, found = LatestGen(id, s.sessions[id])
	}); err != nil {
		return driver.Session{}, false, err
	}
	return sess, found, nil
}

// LatestGen returns the document of session id with the highest expiry and
// HasFirst. It does as GetSession does, given each generation's expiry.
func LatestGen(id string, gens map[int]time.Time) (driver.Session, bool) {
	var best driver.Session
	found := false
	for gen, exp := range gens {
		if !found || exp.After(best.ExpiresAt) {
			best, found = driver.Session{ID: id, Gen: gen, ExpiresAt: exp}, true
		}
	}
	_, best.HasFirst = gens[0]
	return best, found
}
