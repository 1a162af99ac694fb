package memory

import (
	"context"
	"slices"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Revocations: the first record of each session, never changed. A
// revoke touches no session: renewals go on as before (driver.RevokeStore).

// Revoke implements driver.RevokeStore.
func (r roles) Revoke(ctx context.Context, rev driver.Revocation) error {
	var exists bool
	if err := r.s.do(ctx, Call{Op: "Revoke", Write: true, Session: driver.Session{ID: rev.Session}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		if _, exists = r.s.revoked[rev.Session]; exists {
			return
		}
		if r.s.revoked == nil {
			r.s.revoked = make(map[string]driver.Revocation)
		}
		r.s.revoked[rev.Session] = rev
	}); err != nil {
		return err
	}
	if exists {
		return driver.ErrExists
	}
	return nil
}

// Revoked implements driver.RevokeStore.
func (r roles) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	var (
		rev driver.Revocation
		ok  bool
	)
	if err := r.s.do(ctx, Call{Op: "Revoked", Session: driver.Session{ID: session}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		rev, ok = r.s.revoked[session]
	}); err != nil {
		return driver.Revocation{}, false, err
	}
	return rev, ok, nil
}

// Revocations implements driver.RevokeStore.
func (r roles) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	var out []driver.Revocation
	if err := r.s.do(ctx, Call{Op: "Revocations"}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		out = make([]driver.Revocation, 0, len(r.s.revoked))
		for _, rev := range r.s.revoked {
			out = append(out, rev)
		}
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b driver.Revocation) int { return a.At.Compare(b.At) })
	return out, nil
}
