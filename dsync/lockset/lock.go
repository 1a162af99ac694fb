package lockset

import (
	"context"
	"sync"

	"github.com/rs/xid"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// Lock locks every member of s, blocking until all are held, like
// sync.Mutex.Lock. As dsync.Mutex.Lock does, it retries store errors for
// as long as it takes and panics with the error LockContext returns for
// one that retrying cannot mend (a closed Client: dsync.ErrClosed).
func (s *Set) Lock() {
	s.mustBeUsable()
	if err := s.LockContext(context.Background()); err != nil {
		panic(err)
	}
}

// LockContext locks every member of s, blocking until all are held or ctx
// ends. It returns nil holding every member, or an error holding none:
// when ctx ends first, context.Cause(ctx) as dsync.Mutex.LockContext
// returns it, once what s held is released and its waiting claim
// withdrawn (a release or withdrawal the store does not confirm within
// the release timeout is sent again in the background, as the member's
// own would be).
//
// It first tries every member at once; if one is busy, it releases the
// members after it (in the set's order, doc.go), keeps those before it,
// and waits for the members one by one from it on. A member lost before
// LockContext returns makes it release every member and start again.
func (s *Set) LockContext(ctx context.Context) error {
	s.mustBeUsable()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	id := xid.New().String() // the set's identity in its claims, across restarts
	for {
		holds, err := s.lockOnce(ctx, id)
		if err != nil {
			<-s.sem
			return err
		}
		if h, ok := newHolding(s, holds); ok {
			s.install(h)
			return nil
		}
		s.drop(0, holds, len(holds)) // a member was lost first: start again
	}
}

// lockOnce is one pass of LockContext's: the fast path, then the wait in
// order, each claim naming the set's identity id. It returns every
// member's hold, or an error and holds none.
func (s *Set) lockOnce(ctx context.Context, id string) ([]setcore.Hold, error) {
	turned, _ := s.turnAll()
	holds, _ := s.tryAll(ctx, turned, id)
	i := firstMissing(holds)
	if i == len(holds) {
		return holds, nil
	}
	if ctx.Err() != nil {
		s.drop(0, holds, turned)
		return nil, context.Cause(ctx)
	}
	// Wait at member i holding only members before it: release those
	// after it, none of which the caller has seen.
	if i+1 < turned {
		s.drop(i+1, holds[i+1:], turned-i-1)
		clear(holds[i+1:])
	}
	for k := i; k < len(holds); k++ {
		if k > i || i >= turned {
			if err := s.members[k].m.Turn(ctx); err != nil {
				s.drop(0, holds, k)
				return nil, err
			}
		}
		h, err := s.members[k].m.Acquire(ctx, true, id)
		if err != nil {
			s.drop(0, holds, k+1) // member k has its turn and no hold
			return nil, err
		}
		holds[k] = h
	}
	return holds, nil
}

// TryLock tries to lock every member of s and reports whether it
// succeeded. It never waits on contention; it holds all members or none
// (see TryLockContext).
func (s *Set) TryLock() bool {
	s.mustBeUsable()
	return s.TryLockContext(context.Background()) == nil
}

// TryLockContext tries every member of s at once, each as its
// TryLockContext (TryRLockContext) would, bounded by ctx and the try
// timeout, and returns nil holding all of them. Otherwise it releases
// what it took and returns the error of the first member (in the set's
// order) that failed: a *dsync.HeldError (errors.Is dsync.ErrHeld) for a
// member held or waited for, here or elsewhere; context.Cause(ctx),
// unchanged, when ctx ended first; or the store's error. It returns a
// *dsync.HeldError naming the first member when another goroutine holds
// or is locking s.
func (s *Set) TryLockContext(ctx context.Context) error {
	s.mustBeUsable()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case s.sem <- struct{}{}:
	default:
		return &dsync.HeldError{Key: s.members[0].m.Key()}
	}
	err := s.tryOnce(ctx, xid.New().String())
	if err != nil {
		<-s.sem
	}
	return err
}

// tryOnce is TryLockContext's attempt, under s's own lock, its claims
// naming the set's identity id.
func (s *Set) tryOnce(ctx context.Context, id string) error {
	turned, err := s.turnAll()
	if err != nil {
		s.drop(0, nil, turned)
		return err
	}
	holds, errs := s.tryAll(ctx, turned, id)
	if i := firstMissing(holds); i < len(holds) {
		s.drop(0, holds, turned)
		return errs[i]
	}
	h, ok := newHolding(s, holds)
	if !ok {
		s.drop(0, holds, turned)
		return h.err()
	}
	s.install(h)
	return nil
}

// turnAll takes the members' local turns in the set's order while they
// are free: it returns how many it took, and what the first busy one met.
func (s *Set) turnAll() (int, error) {
	for i, m := range s.members {
		if err := m.m.TryTurn(); err != nil {
			return i, err
		}
	}
	return len(s.members), nil
}

// tryAll tries the first n members at once, under their turns, each
// claim naming the set's identity id. A try never queues, so it overtakes
// no one.
func (s *Set) tryAll(ctx context.Context, n int, id string) ([]setcore.Hold, []error) {
	holds := make([]setcore.Hold, len(s.members))
	errs := make([]error, len(s.members))
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() { holds[k], errs[k] = s.members[k].m.Acquire(ctx, false, id) })
	}
	wg.Wait()
	return holds, errs
}

// firstMissing is the place of the first member not held.
func firstMissing(holds []setcore.Hold) int {
	for i, h := range holds {
		if h == nil {
			return i
		}
	}
	return len(holds)
}

// install makes h s's current holding, and starts its members' progress
// deadlines: the caller holds from now.
func (s *Set) install(h *holding) {
	h.startAll()
	s.mu.Lock()
	s.held, s.last = h, h
	s.mu.Unlock()
}
