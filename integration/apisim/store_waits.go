package apisim

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// waitsVia and deadlocksVia are the memory store's records of deadlock
// detection between lock sets (driver.WaitStore, driver.DeadlockStore)
// through a process's network: a note or a record is a write like any
// other, which may land late, after its sender gave up on it, or not at
// all, and a read of the latest note may fail. The oracle learns of each
// that lands (set_claims.go). Listings, which only people's readers
// make, reach the store directly.
type waitsVia struct{ s *procStore }

type deadlocksVia struct{ s *procStore }

var (
	_ driver.WaitStore     = waitsVia{}
	_ driver.DeadlockStore = deadlocksVia{}
)

// PutWait implements driver.WaitStore.
func (v waitsVia) PutWait(ctx context.Context, n driver.Wait) error {
	s := v.s
	var err error
	rerr := s.request(ctx, "insert-wait", func(plan) {
		err = s.mem().Waits.PutWait(context.Background(), n)
		s.p.w.tracef("%s insert-wait %s %d at %s@%d holds %v since %s: %v", s.name(), n.Set, n.N, n.Key, n.Epoch, n.Holds, n.Since.Format(tf), err)
		if err == nil {
			s.p.w.noted(s.p, n)
		}
	}, nil)
	if rerr != nil {
		return rerr
	}
	return err
}

// LatestWait implements driver.WaitStore.
func (v waitsVia) LatestWait(ctx context.Context, set string) (driver.Wait, bool, error) {
	var n driver.Wait
	var found bool
	err := v.s.request(ctx, "get-wait", func(plan) {
		n, found, _ = v.s.mem().Waits.LatestWait(context.Background(), set)
	}, nil)
	if err != nil {
		return driver.Wait{}, false, err
	}
	return n, found, nil
}

// ListWaits implements driver.WaitStore.
func (v waitsVia) ListWaits(ctx context.Context, since time.Time) ([]driver.Wait, error) {
	return v.s.mem().Waits.ListWaits(ctx, since)
}

// PutDeadlock implements driver.DeadlockStore.
func (v deadlocksVia) PutDeadlock(ctx context.Context, d driver.Deadlock) error {
	s := v.s
	var err error
	rerr := s.request(ctx, "insert-deadlock", func(plan) {
		err = s.mem().Deadlocks.PutDeadlock(context.Background(), d)
		s.p.w.tracef("%s insert-deadlock victim %s %d cycle %v: %v", s.name(), d.Victim, d.N, d.Cycle, err)
		if err == nil {
			s.p.w.broke(s.p, d)
		}
	}, nil)
	if rerr != nil {
		return rerr
	}
	return err
}

// ListDeadlocks implements driver.DeadlockStore.
func (v deadlocksVia) ListDeadlocks(ctx context.Context, since time.Time) ([]driver.Deadlock, error) {
	return v.s.mem().Deadlocks.ListDeadlocks(ctx, since)
}
