package lockset

import (
	"context"
	"errors"
	"slices"
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
	tr := &tracker{id: xid.New().String()} // the set's identity in its claims, across restarts
	for {
		holds, err := s.lockOnce(ctx, s.members, tr, nil)
		var v *victimError
		if errors.As(err, &v) && ctx.Err() == nil {
			// The youngest of a cycle with a LockMore: its holds are
			// released, so the cycle is gone; it starts again, as old.
			s.recordBreak(ctx, v, tr)
			continue
		}
		if err != nil {
			<-s.sem
			return err
		}
		if h, ok := newHolding(s, s.members, s.given, holds, tr); ok {
			s.install(h)
			return nil
		}
		s.drop(s.members, holds, len(holds)) // a member was lost first: start again
	}
}

// lockOnce is one pass of LockContext's over members (in the set's
// order): the fast path, then the wait in order, each claim naming the
// set's identity (tr). base are the holds the set keeps meanwhile
// (LockMore's). It returns every member's hold, or an error and holds
// none of members: a *victimError if the set gave up a wait as the
// youngest of a deadlock (watch.go).
func (s *Set) lockOnce(ctx context.Context, members []Member, tr *tracker, base []setcore.Hold) ([]setcore.Hold, error) {
	turned, _ := turnAll(members)
	holds, _ := tryAll(ctx, members, turned, tr.id)
	i := firstMissing(holds)
	if i < len(holds) && ctx.Err() != nil {
		s.drop(members, holds, turned)
		return nil, context.Cause(ctx)
	}
	if i > 0 || len(base) > 0 {
		tr.holding(s)
	}
	if i == len(holds) {
		return holds, nil
	}
	// Wait at member i holding only members before it: release those
	// after it, none of which the caller has seen.
	if i+1 < turned {
		s.drop(members[i+1:], holds[i+1:], turned-i-1)
		clear(holds[i+1:])
	}
	for k := i; k < len(holds); k++ {
		if k > i || i >= turned {
			if err := members[k].m.Turn(ctx); err != nil {
				s.drop(members, holds, k)
				return nil, err
			}
		}
		h, err := s.await(ctx, members[k], tr, append(slices.Clip(base), holds[:k]...))
		if err != nil {
			s.drop(members, holds, k+1) // member k has its turn and no hold
			return nil, err
		}
		holds[k] = h
		tr.holding(s)
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
	turned, err := turnAll(s.members)
	if err != nil {
		s.drop(s.members, nil, turned)
		return err
	}
	holds, errs := tryAll(ctx, s.members, turned, id)
	if i := firstMissing(holds); i < len(holds) {
		s.drop(s.members, holds, turned)
		return errs[i]
	}
	tr := &tracker{id: id}
	tr.holding(s)
	h, ok := newHolding(s, s.members, s.given, holds, tr)
	if !ok {
		s.drop(s.members, holds, turned)
		return h.err()
	}
	s.install(h)
	return nil
}

// turnAll takes members' local turns in order while they are free: it
// returns how many it took, and what the first busy one met.
func turnAll(members []Member) (int, error) {
	for i, m := range members {
		if err := m.m.TryTurn(); err != nil {
			return i, err
		}
	}
	return len(members), nil
}

// tryAll tries the first n of members at once, under their turns, each
// claim naming the set's identity id. A try never queues, so it overtakes
// no one.
func tryAll(ctx context.Context, members []Member, n int, id string) ([]setcore.Hold, []error) {
	holds := make([]setcore.Hold, len(members))
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() { holds[k], errs[k] = members[k].m.Acquire(ctx, false, id) })
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
	startAll(h.holds)
	s.mu.Lock()
	s.held, s.last = h, h
	s.mu.Unlock()
}
