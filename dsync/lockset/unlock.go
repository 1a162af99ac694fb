package lockset

import (
	"context"
	"errors"
	"sync"

	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// Unlock unlocks every member of s, releasing each hold, like
// sync.Mutex.Unlock; the members are released at once, each bounded by
// its release timeout and reported as its own Unlock reports it (see
// dsync.Mutex.Unlock). It is a run-time error (a panic) if s is not
// locked, or if a member was unlocked directly (through its Mutex or
// RWMutex) while s held it.
func (s *Set) Unlock() {
	s.mustBeUsable()
	s.unlock(func(h setcore.Hold) error { return h.Unlock() })
}

// UnlockContext unlocks every member of s like Unlock, bounding every
// release by ctx, and reports the outcome: the members' errors joined
// (errors.Join). One wraps dsync.ErrLost, naming its key, for each member
// lost before this call (its lease is left to run out, as a member's
// UnlockContext leaves it); one is the store's error for each release not
// confirmed, which the Client sends again in the background. s is
// unlocked locally in every case.
func (s *Set) UnlockContext(ctx context.Context) error {
	s.mustBeUsable()
	return s.unlock(func(h setcore.Hold) error { return h.Release(ctx) })
}

// unlock ends s's holding, releasing each member by release.
func (s *Set) unlock(release func(setcore.Hold) error) error {
	s.mu.Lock()
	h := s.held
	s.held = nil
	s.mu.Unlock()
	if h == nil {
		panic("lockset: unlock of unlocked Set")
	}
	defer func() { <-s.sem }()
	_, _, holds := h.view()
	return errors.Join(releaseEach(holds, release)...)
}

// drop gives up what a pass took: holds are those of members, the first
// turned of which have their turns; each hold is released (within its
// release timeout, whatever the caller's ctx did), each turn without a
// hold given back.
func (s *Set) drop(members []Member, holds []setcore.Hold, turned int) {
	var held []setcore.Hold
	for j := range turned {
		if j < len(holds) && holds[j] != nil {
			held = append(held, holds[j])
		} else {
			members[j].m.Unturn()
		}
	}
	releaseEach(held, func(h setcore.Hold) error { return h.Unlock() })
}

// releaseEach releases holds at once, by release, and returns their
// errors. It panics, once all are done, if one had been unlocked outside
// its set: that unlock gave back its turn and released it.
func releaseEach(holds []setcore.Hold, release func(setcore.Hold) error) []error {
	errs := make([]error, len(holds))
	var wg sync.WaitGroup
	for i, h := range holds {
		wg.Go(func() { errs[i] = release(h) })
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, setcore.ErrUninstalled) {
			panic(err.Error())
		}
	}
	return errs
}
