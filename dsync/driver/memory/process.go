package memory

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// ErrUnreachable is what every request of a Process returns while it is
// set unreachable (SetReachable): a test's stand-in for a database that
// cannot be reached.
var ErrUnreachable = errors.New("memory: the store is unreachable (Process.SetReachable)")

// Process returns a new view of s for one simulated process, with fault
// switches of its own: give each dsync.Client of a test its own.
func (s *Store) Process() *Process { return &Process{Store: s} }

var (
	_ driver.Store = (*Process)(nil)
	_ driver.Feed  = (*Process)(nil)
)

// SetReachable makes the process's store unreachable (false), as a
// database that went away, or reachable again (true). While it is
// unreachable, every request fails at once with ErrUnreachable: the
// Client's renewals fail, so every hold ends at its deadline (Lost
// closes, UnlockContext returns dsync.ErrLost), and Lock keeps trying
// until its context ends or the store is back. Only this process is cut
// off: the others on the store go on.
//
// Tests of code that must stop using a resource when its lock is lost
// use it with a short TTL (dsync.WithTTL), under testing/synctest for fake
// time.
func (s *Process) SetReachable(reachable bool) { s.down.Store(!reachable) }

// Reachable reports whether the process's store is reachable (see
// SetReachable).
func (s *Process) Reachable() bool { return !s.down.Load() }

// SetAnswering(false) makes the process's store stop answering, as a
// server that hangs or a network that holds requests back: every request
// of this process waits until the store answers again or the request's
// context ends, and then fails with the context's cause. A write whose
// sender gave up that way is not lost: it lands when the store answers
// again (SetAnswering(true)), in the order the senders gave up, as a
// request held back in a network lands late; its sender never learns that
// it did. SetReachable(false) takes precedence: an unreachable store fails
// requests at once.
//
// Tests of how long code waits for a store that does not answer, and of
// what a late write leaves behind, use it under testing/synctest.
func (s *Process) SetAnswering(answering bool) { s.setAnswering(answering) }

// A Process is one simulated process's view of a Store: a driver.Store
// and driver.Feed of its own, to give one dsync.Client, that its test can
// cut off from the store (SetReachable) or make wait for it
// (SetAnswering) while the other processes on the store go on, as the
// other processes of a partition do. Closing it leaves the store to the
// others. Make it with Store.Process.
type Process struct {
	*Store
	down atomic.Bool

	mu sync.Mutex
	// stalled is not nil while the store does not answer, and is closed
	// when it answers again.
	stalled chan struct{}
	// late holds the writes whose senders gave up while the store did not
	// answer, to land when it answers again.
	late []func()
}

func (s *Process) setAnswering(answering bool) {
	if !answering {
		s.mu.Lock()
		if s.stalled == nil {
			s.stalled = make(chan struct{})
		}
		s.mu.Unlock()
		return
	}
	for {
		s.mu.Lock()
		late := s.late
		s.late = nil
		if len(late) == 0 {
			if s.stalled != nil {
				close(s.stalled)
				s.stalled = nil
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for _, land := range late {
			land()
		}
	}
}

// gate lets a request go on (nil), or returns the error its sender gets:
// ErrUnreachable while the store is unreachable, or ctx's cause if ctx
// ends while the store does not answer. A write (land, nil for a read)
// whose sender gave up then lands when the store answers again.
func (s *Process) gate(ctx context.Context, land func()) error {
	if ctx.Err() != nil {
		return context.Cause(ctx) // never sent
	}
	for {
		if s.down.Load() {
			return ErrUnreachable
		}
		s.mu.Lock()
		stalled := s.stalled
		s.mu.Unlock()
		if stalled == nil {
			return nil
		}
		select {
		case <-stalled:
			continue
		case <-ctx.Done():
		}
		s.mu.Lock()
		still := s.stalled == stalled
		if still && land != nil {
			s.late = append(s.late, land)
		}
		s.mu.Unlock()
		if !still && land != nil {
			land() // the store answered as its sender gave up: it lands, its reply is lost
		}
		return context.Cause(ctx)
	}
}

// lateCtx is the context a late write lands with.
var lateCtx = context.Background()

// Prepare fails while the store is unreachable, but does not wait while
// it does not answer: a store that is prepared once (MongoDB's) sends
// nothing for it again.
func (s *Process) Prepare(ctx context.Context) error {
	if s.down.Load() {
		return ErrUnreachable
	}
	return s.Store.Prepare(ctx)
}

func (s *Process) Insert(ctx context.Context, d driver.Doc) error {
	if err := s.gate(ctx, func() { _ = s.Store.Insert(lateCtx, d) }); err != nil {
		return err
	}
	return s.Store.Insert(ctx, d)
}

func (s *Process) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	if err := s.gate(ctx, func() { _, _ = s.Store.InsertOrdered(lateCtx, docs) }); err != nil {
		return 0, err
	}
	return s.Store.InsertOrdered(ctx, docs)
}

func (s *Process) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	if err := s.gate(ctx, func() { _ = s.Store.InsertEach(lateCtx, docs) }); err != nil {
		errs := make([]error, len(docs))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return s.Store.InsertEach(ctx, docs)
}

func (s *Process) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	if err := s.gate(ctx, nil); err != nil {
		return driver.Doc{}, false, err
	}
	return s.Store.Get(ctx, id)
}

func (s *Process) Delete(ctx context.Context, ids []string) error {
	if err := s.gate(ctx, func() { _ = s.Store.Delete(lateCtx, ids) }); err != nil {
		return err
	}
	return s.Store.Delete(ctx, ids)
}

func (s *Process) RecentKeys(ctx context.Context, from int64) ([]string, error) {
	if err := s.gate(ctx, nil); err != nil {
		return nil, err
	}
	return s.Store.RecentKeys(ctx, from)
}

func (s *Process) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	if err := s.gate(ctx, func() { _, _ = s.Store.Compact(lateCtx, sentBefore, keep) }); err != nil {
		return 0, err
	}
	return s.Store.Compact(ctx, sentBefore, keep)
}

func (s *Process) DropGates(ctx context.Context, below int64, sentBefore time.Time) error {
	if err := s.gate(ctx, func() { _ = s.Store.DropGates(lateCtx, below, sentBefore) }); err != nil {
		return err
	}
	return s.Store.DropGates(ctx, below, sentBefore)
}

func (s *Process) PutKeys(ctx context.Context, keys []string) error {
	if err := s.gate(ctx, func() { _ = s.Store.PutKeys(lateCtx, keys) }); err != nil {
		return err
	}
	return s.Store.PutKeys(ctx, keys)
}

func (s *Process) HasKey(ctx context.Context, key string) (bool, error) {
	if err := s.gate(ctx, nil); err != nil {
		return false, err
	}
	return s.Store.HasKey(ctx, key)
}

func (s *Process) ListKeys(ctx context.Context, q driver.KeyQuery) iter.Seq2[string, error] {
	if err := s.gate(ctx, nil); err != nil {
		return func(yield func(string, error) bool) { yield("", err) }
	}
	return s.Store.ListKeys(ctx, q)
}

func (s *Process) InsertSession(ctx context.Context, sess driver.Session) error {
	if err := s.gate(ctx, func() { _ = s.Store.InsertSession(lateCtx, sess) }); err != nil {
		return err
	}
	return s.Store.InsertSession(ctx, sess)
}

func (s *Process) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if err := s.gate(ctx, func() { _, _ = s.Store.RenewSession(lateCtx, id, gen, expires) }); err != nil {
		return false, err
	}
	return s.Store.RenewSession(ctx, id, gen, expires)
}

func (s *Process) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	if err := s.gate(ctx, nil); err != nil {
		return driver.Session{}, false, err
	}
	return s.Store.GetSession(ctx, id)
}

func (s *Process) Publish(ctx context.Context, e driver.Event) error {
	if err := s.gate(ctx, func() { _ = s.Store.Publish(lateCtx, e) }); err != nil {
		return err
	}
	return s.Store.Publish(ctx, e)
}
