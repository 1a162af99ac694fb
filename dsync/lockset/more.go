package lockset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// LockMore adds the members more to s, which holds, and locks them: it
// returns nil holding them too, s's members from then on (Tokens lists
// their tokens after the others, in the order given). It takes them as
// LockContext takes a Set's members, in the set's order among
// themselves, while s keeps every member it holds: so, unlike Lock, it
// may close a cycle of waits with another Set (doc.go, "Deadlocks").
//
// It returns an error and leaves s as it was (holding what it held, none
// of more) when ctx ends first (context.Cause(ctx)), for two of more of
// one stored key (ErrTwice), or for a member of another Client
// (ErrOtherClient). With deadlock detection on (WithDeadlockTimeout),
// when s was the youngest Set of a deadlock, it returns a *DeadlockError
// (errors.Is ErrDeadlock) naming the cycle, and leaves s unlocked: Lost
// closes, Err returns that error (or, as it names the first loss, that
// of a member lost before it), every member is released, and s must not
// be unlocked again (a run-time error, as a second Unlock is).
//
// It is a run-time error (a panic) if s is not locked, or if a member of
// more is of a key s has. It must not run at the same time as another
// LockMore or an Unlock of s.
func (s *Set) LockMore(ctx context.Context, more ...Member) error {
	s.mustBeUsable()
	s.mu.Lock()
	h := s.held
	s.mu.Unlock()
	if h == nil {
		panic("lockset: LockMore of unlocked Set")
	}
	add, addGiven, err := s.checkMore(h, more)
	if err != nil || len(add) == 0 {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	for {
		_, _, base := h.view()
		holds, err := s.lockOnce(ctx, add, h.track, base)
		var v *victimError
		if errors.As(err, &v) {
			s.recordBreak(ctx, v, h.track)
			e := v.public()
			h.fail(e)
			s.unlock(func(hd setcore.Hold) error { return hd.Unlock() })
			return e
		}
		if err != nil {
			return err
		}
		if !anyLost(holds) {
			s.grow(h, add, addGiven, holds)
			return nil
		}
		s.drop(add, holds, len(holds)) // one was lost first: start again
	}
}

// checkMore returns more in the set's order and their given places
// (order), or why LockMore refuses them. It panics for a member of a key
// h has.
func (s *Set) checkMore(h *holding, more []Member) ([]Member, []int, error) {
	if err := s.cfg.check(s.client, more); err != nil {
		return nil, nil, err
	}
	add, given, err := order(more)
	if err != nil {
		return nil, nil, err
	}
	members, _, _ := h.view()
	for _, m := range add {
		for _, had := range members {
			if had.m.Stored() == m.m.Stored() {
				panic(fmt.Sprintf("lockset: LockMore of %s %q, whose key the Set has", m.kind, m.m.Key()))
			}
		}
	}
	return add, given, nil
}

// anyLost tells whether a hold of holds is lost.
func anyLost(holds []setcore.Hold) bool {
	for _, m := range holds {
		select {
		case <-m.Lost():
			return true
		default:
		}
	}
	return false
}

// grow makes add, held with holds, members of s and of its holding h,
// in the set's order, their given places after the others', and starts
// their progress deadlines.
func (s *Set) grow(h *holding, add []Member, addGiven []int, holds []setcore.Hold) {
	h.mu.Lock()
	all := append(slices.Clip(h.members), add...)
	allHolds := append(slices.Clip(h.holds), holds...)
	idx := takingOrder(all)
	pos := make([]int, len(all)) // pos[i] is the new place of all[i]
	members, sorted := make([]Member, len(all)), make([]setcore.Hold, len(all))
	for at, i := range idx {
		pos[i], members[at], sorted[at] = at, all[i], allHolds[i]
	}
	given := make([]int, 0, len(all))
	for _, g := range h.given {
		given = append(given, pos[g])
	}
	for _, g := range addGiven {
		given = append(given, pos[len(h.members)+g])
	}
	h.members, h.given, h.holds = members, given, sorted
	h.mu.Unlock()
	s.mu.Lock()
	s.members, s.given = members, given
	s.mu.Unlock()
	h.watch(add, holds)
	startAll(holds)
}
