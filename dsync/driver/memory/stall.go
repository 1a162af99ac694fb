package memory

import (
	"context"
	"slices"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Stall records: the first record of each claim (session and nonce),
// never changed (driver.StallStore). The store keeps them until Reset.

// stallID is a stall record's identity: its session and nonce.
type stallID struct{ session, nonce string }

// RecordStall implements driver.StallStore.
func (r roles) RecordStall(ctx context.Context, st driver.Stall) error {
	var exists bool
	if err := r.s.do(ctx, Call{Op: "RecordStall", Write: true, Session: driver.Session{ID: st.Session}}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		id := stallID{st.Session, st.Nonce}
		if _, exists = r.s.stalls[id]; exists {
			return
		}
		if r.s.stalls == nil {
			r.s.stalls = make(map[stallID]driver.Stall)
		}
		r.s.stalls[id] = st
	}); err != nil {
		return err
	}
	if exists {
		return driver.ErrExists
	}
	return nil
}

// Stalls implements driver.StallStore.
func (r roles) Stalls(ctx context.Context) ([]driver.Stall, error) {
	var out []driver.Stall
	if err := r.s.do(ctx, Call{Op: "Stalls"}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		out = make([]driver.Stall, 0, len(r.s.stalls))
		for _, st := range r.s.stalls {
			out = append(out, st)
		}
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b driver.Stall) int { return a.At.Compare(b.At) })
	return out, nil
}
