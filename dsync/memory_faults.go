package dsync

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// ErrUnreachable is what every request to a MemoryBackend's store returns
// while the backend is set unreachable (SetReachable): a test's stand-in
// for a database that cannot be reached.
var ErrUnreachable = errors.New("dsync: the in-memory store is unreachable (MemoryBackend.SetReachable)")

// SetReachable makes the backend's store unreachable (false), as a
// database that went away, or reachable again (true). While it is
// unreachable, every request fails with ErrUnreachable: renewals fail, so
// every hold ends at its deadline (Lost closes, UnlockContext returns
// ErrLost), and Lock keeps trying until its context ends or the store is
// back. Holds of other Clients on the same store are not affected.
//
// Tests of code that must stop using a resource when its lock is lost
// use it with a short TTL, under testing/synctest for fake time.
func (b *MemoryBackend) SetReachable(reachable bool) { b.store.down.Store(!reachable) }

// Reachable reports whether the backend's store is reachable (see
// SetReachable).
func (b *MemoryBackend) Reachable() bool { return !b.store.down.Load() }

// faultyStore is a memory.Store that can be made unreachable.
type faultyStore struct {
	*memory.Store
	down atomic.Bool
}

func (s *faultyStore) fail() error {
	if s.down.Load() {
		return ErrUnreachable
	}
	return nil
}

func (s *faultyStore) Prepare(ctx context.Context) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.Prepare(ctx)
}

func (s *faultyStore) Insert(ctx context.Context, d driver.Doc) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.Insert(ctx, d)
}

func (s *faultyStore) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	if err := s.fail(); err != nil {
		return 0, err
	}
	return s.Store.InsertOrdered(ctx, docs)
}

func (s *faultyStore) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	if err := s.fail(); err != nil {
		errs := make([]error, len(docs))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return s.Store.InsertEach(ctx, docs)
}

func (s *faultyStore) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	if err := s.fail(); err != nil {
		return driver.Doc{}, false, err
	}
	return s.Store.Get(ctx, id)
}

func (s *faultyStore) Delete(ctx context.Context, ids []string) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.Delete(ctx, ids)
}

func (s *faultyStore) RecentKeys(ctx context.Context, from int64) ([]string, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Store.RecentKeys(ctx, from)
}

func (s *faultyStore) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	if err := s.fail(); err != nil {
		return 0, err
	}
	return s.Store.Compact(ctx, sentBefore, keep)
}

func (s *faultyStore) DropGates(ctx context.Context, below int64) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.DropGates(ctx, below)
}

func (s *faultyStore) PutKeys(ctx context.Context, keys []string) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.PutKeys(ctx, keys)
}

func (s *faultyStore) HasKey(ctx context.Context, key string) (bool, error) {
	if err := s.fail(); err != nil {
		return false, err
	}
	return s.Store.HasKey(ctx, key)
}

func (s *faultyStore) ListKeys(ctx context.Context, q driver.KeyQuery) iter.Seq2[string, error] {
	if err := s.fail(); err != nil {
		return func(yield func(string, error) bool) { yield("", err) }
	}
	return s.Store.ListKeys(ctx, q)
}

func (s *faultyStore) InsertSession(ctx context.Context, sess driver.Session) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.InsertSession(ctx, sess)
}

func (s *faultyStore) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if err := s.fail(); err != nil {
		return false, err
	}
	return s.Store.RenewSession(ctx, id, gen, expires)
}

func (s *faultyStore) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	if err := s.fail(); err != nil {
		return driver.Session{}, false, err
	}
	return s.Store.GetSession(ctx, id)
}

func (s *faultyStore) Publish(ctx context.Context, e driver.Event) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Store.Publish(ctx, e)
}
