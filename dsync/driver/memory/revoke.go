package memory

import (
	"context"
	"slices"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Revocations: the first record of each session, never changed. A
// revoke touches no session: renewals go on as before (driver.RevokeStore).

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

// Revoked implements driver.RevokeStore.
func (s *Store) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	if err := live(ctx); err != nil {
		return driver.Revocation{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.revoked[session]
	return r, ok, nil
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

// Revoke implements driver.RevokeStore through the process's network: an
// insert given up on lands later, as any write.
func (s *Process) Revoke(ctx context.Context, r driver.Revocation) error {
	if err := s.gate(ctx, func() { _ = s.Store.Revoke(lateCtx, r) }); err != nil {
		return err
	}
	return s.Store.Revoke(ctx, r)
}

// Revoked implements driver.RevokeStore through the process's network.
func (s *Process) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	if err := s.gate(ctx, nil); err != nil {
		return driver.Revocation{}, false, err
	}
	return s.Store.Revoked(ctx, session)
}

// Revocations implements driver.RevokeStore through the process's network.
func (s *Process) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	if err := s.gate(ctx, nil); err != nil {
		return nil, err
	}
	return s.Store.Revocations(ctx)
}
