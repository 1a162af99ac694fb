package memory

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The sweeper's reads and deletes (driver.Maintainer).

// RecentKeys implements driver.Maintainer.
func (r roles) RecentKeys(ctx context.Context, from int64) ([]string, error) {
	var keys []string
	if err := r.s.do(ctx, Call{Op: "RecentKeys"}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		set := make(map[string]bool)
		for _, d := range r.s.docs {
			if d.Kind == driver.KindGate && d.Bucket >= from {
				set[d.Key] = true
			}
		}
		keys = slices.Sorted(maps.Keys(set))
	}); err != nil {
		return nil, err
	}
	return keys, nil
}

// Compact implements driver.Maintainer.
func (r roles) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	var n int64
	if err := r.s.do(ctx, Call{Op: "Compact", Write: true, Keys: keep}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		ids := r.s.compactSetLocked(sentBefore, keep)
		for _, id := range ids {
			delete(r.s.docs, id)
		}
		n = int64(len(ids))
	}); err != nil {
		return 0, err
	}
	return n, nil
}

// CompactSet returns the IDs of the documents Compact(sentBefore, keep)
// would delete now. A store whose deletes are not atomic reads this set
// first and deletes its members later (the simulation does).
func (s *Store) CompactSet(sentBefore time.Time, keep []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compactSetLocked(sentBefore, keep)
}

func (s *state) compactSetLocked(sentBefore time.Time, keep []string) []string {
	kept := make(map[string]bool, len(keep))
	for _, k := range keep {
		kept[k] = true
	}
	var ids []string
	for id, d := range s.docs {
		if d.Kind == driver.KindDone && (d.Exp.IsZero() || !d.Exp.Before(sentBefore)) {
			continue // a done record goes only once its expiry passed
		}
		if !kept[d.Key] && d.Kind != driver.KindProtocol && d.Sent.Before(sentBefore) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// DropGates implements driver.Maintainer.
func (r roles) DropGates(ctx context.Context, below int64, sentBefore time.Time) error {
	return r.s.do(ctx, Call{Op: "DropGates", Write: true}, func() {
		r.s.mu.Lock()
		defer r.s.mu.Unlock()
		for id, d := range r.s.docs {
			if d.Kind == driver.KindGate && d.Bucket < below && d.Sent.Before(sentBefore) {
				delete(r.s.docs, id)
			}
		}
	})
}
