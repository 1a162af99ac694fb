package memory

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Sessions: each generation's expiry, by session.

// InsertSession implements driver.Store.
func (s *Store) InsertSession(ctx context.Context, sess driver.Session) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	gens := s.sessions[sess.ID]
	if gens == nil {
		gens = make(map[int]time.Time)
		s.sessions[sess.ID] = gens
	}
	if _, ok := gens[sess.Gen]; ok {
		return driver.ErrExists
	}
	gens[sess.Gen] = sess.ExpiresAt
	return nil
}

// RenewSession implements driver.Store.
func (s *Store) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if err := live(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.sessions[id][gen]
	if !ok {
		return false, nil
	}
	if expires.After(old) {
		s.sessions[id][gen] = expires
	}
	return true, nil
}

// GetSession implements driver.Store.
func (s *Store) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	if err := live(ctx); err != nil {
		return driver.Session{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, found := LatestGen(id, s.sessions[id])
	return sess, found, nil
}

// LatestGen returns the document of session id with the highest expiry
// and HasFirst, as GetSession does, given each generation's expiry.
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
