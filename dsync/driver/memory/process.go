package memory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrUnreachable is what every request of a Process returns while it is set
// unreachable (SetReachable). It is a test's stand-in for a database that
// cannot be reached.
var ErrUnreachable = errors.New("memory: the store is unreachable (Process.SetReachable)")

// A Process is one simulated process's view of a Store (Store.Process), to
// give one dsync.Client. Its test can cut it off from the store
// (SetReachable) or make it wait for it (SetAnswering). The other processes
// on the store go on meanwhile, as the other processes of a partition do.
type Process struct {
	*Store
	down    atomic.Bool
	mu      sync.Mutex
	stalled chan struct{}  // not nil while the store does not answer; closed when it answers
	late    []func() error // the writes given up on meanwhile, to land then
}

// Process returns a new view of s for one simulated process. Its fault
// switches see every call (of its roles too) after s's hooks (Intercept).
func (s *Store) Process() *Process {
	p := &Process{}
	p.Store = s.Intercept(p.gate)
	return p
}

// SetReachable(false) makes the process's store unreachable, as a database
// that went away. SetReachable(true) makes it reachable again. While it is
// unreachable, every request fails at once with ErrUnreachable: the
// Client's renewals fail, so every hold ends at its deadline (Lost closes,
// UnlockContext returns dsync.ErrLost), and Lock keeps trying until its
// context ends or the store is back. Only this process is cut off: the
// others on the store go on.
func (s *Process) SetReachable(reachable bool) { s.down.Store(!reachable) }

// Reachable reports whether the process's store is reachable.
func (s *Process) Reachable() bool { return !s.down.Load() }

// SetAnswering(false) makes the process's store stop answering. It acts as
// a server that hangs or a network that holds requests back. Every request
// of this process waits until the store answers again or the request's
// context ends, and then fails with the context's cause. A write whose
// sender gave up that way is not lost. It lands when the store answers
// again (SetAnswering(true)), in the order the senders gave up, as a
// request held back in a network lands late. Its sender never learns that
// it did. SetReachable(false) takes precedence.
func (s *Process) SetAnswering(answering bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !answering && s.stalled == nil:
		s.stalled = make(chan struct{})
	case answering && s.stalled != nil:
		for _, land := range s.late {
			_ = land()
		}
		s.late = nil
		close(s.stalled)
		s.stalled = nil
	}
}

// gate is the process's Hook. Prepare is not held while the store does
// not answer: a store prepared once (MongoDB's) sends nothing for it again.
func (s *Process) gate(ctx context.Context, c Call, serve func() error) error {
	for {
		if s.down.Load() {
			return ErrUnreachable
		}
		s.mu.Lock()
		stalled := s.stalled
		s.mu.Unlock()
		if stalled == nil || c.Op == "Prepare" {
			return nil
		}
		select {
		case <-stalled:
			continue
		case <-ctx.Done():
		}
		s.mu.Lock()
		still := s.stalled == stalled
		if still && c.Write {
			s.late = append(s.late, serve)
		}
		s.mu.Unlock()
		if !still && c.Write {
			_ = serve() // the store answered as its sender gave up: it lands, its reply is lost
		}
		return context.Cause(ctx)
	}
}
