package memory

import (
	"context"
	"slices"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Revocations: the first record of each session, never changed.

var _ driver.RevokeStore = (*Store)(nil)

// Revoke implements driver.RevokeStore.
func (s *Store) Revoke(ctx context.Context, r driver.Revocation) error {
	if err := live(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.revoked[r.Session]; ok {
		return driver.ErrExists
	}
	if s.revoked == nil {
		s.revoked = make(map[string]driver.Revocation)
	}
	s.revoked[r.Session] = r
	return nil
}

// Revocations implements driver.RevokeStore.
func (s *Store) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	if err := live(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]driver.Revocation, 0, len(s.revoked))
	for _, r := range s.revoked {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b driver.Revocation) int { return a.At.Compare(b.At) })
	return out, nil
}
