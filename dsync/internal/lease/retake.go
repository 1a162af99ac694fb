package lease

import (
	"errors"
	"fmt"
)

// Taking a kept claim over. A resume (suspend.go) keeps the claims of
// the holds its suspension lost: those holds stay lost (their Lost
// closed at the deadline, for good), but stay counted as kept, so that
// the session stays in use (renewed, its deadline timer armed, its keys'
// coverage extended) until each is taken over by a new hold of the same
// claim (Retake) or let go (Remove, LetGo), whose caller then ends the
// claim. A kept hold is part of any later suspension of its session
// (checked and resumed, or marked dead, with the others), and is
// dropped when its session is retired.

// ErrNotKept is what Retake returns for a hold whose claim is not kept:
// it was let go (LetGo, Remove), or was never lost to a suspension.
var ErrNotKept = errors.New("the hold's claim is no longer kept")

// keptLocked reports whether h is kept by a resume of a session relied
// on now (not suspended, not retired). k.mu must be held.
func (k *Keeper[H]) keptLocked(h H) bool {
	s := k.holds[h]
	return k.kept[h] && s != nil && !s.retired && s.sus == nil
}

// keptOfLocked returns the kept holds of s. k.mu must be held.
func (k *Keeper[H]) keptOfLocked(s *Session[H]) []H {
	var kept []H
	for h := range k.kept {
		if k.holds[h] == s {
			kept = append(kept, h)
		}
	}
	return kept
}

// Retake makes next, a new hold of the claim that old held in session s,
// a hold of s in old's place, if a resume of s kept old's claim: s is
// relied on (not suspended, not retired), its deadline has not passed and
// the claim's key stays covered until it (as for Join). It reports
// whether it did. Otherwise, with a nil error, the verdict is still to
// come: s is suspended, or its deadline has passed and the caller's
// ExpireIfDue suspends it (then AwaitVerdict, and Retake again); with an
// error, old's claim can no longer be taken: why s was retired (wrapping
// Errors.Lost), ErrNotKept, or a lapsed coverage. It counts no waiter:
// next takes old's place, and old is no longer counted.
func (k *Keeper[H]) Retake(old, next H, s *Session[H]) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case s.retired:
		return false, s.why
	case s.sus != nil:
		return false, nil
	case !k.kept[old] || k.holds[old] != s || k.sess != s:
		return false, ErrNotKept
	case k.judgedAt(k.p.Clock.Now()) >= s.lease.Deadline():
		return false, nil
	case !k.coveredLocked(next, s):
		return false, fmt.Errorf("%w: the coverage of %q does not last until the session's deadline", k.env.Errors.Lost, next.Key())
	case !next.Start(k.deadlineLocked(s)):
		return false, nil
	}
	delete(k.holds, old)
	delete(k.kept, old)
	k.holds[next] = s
	return true, nil
}

// LetGo stops counting h if a resume of a session relied on now keeps it
// (keptLocked), and reports whether it did: h's claim is then the
// caller's to end. A kept hold of a session suspended again is left
// kept: its next verdict decides (and a resume tells it again).
func (k *Keeper[H]) LetGo(h H) bool {
	k.mu.Lock()
	kept := k.keptLocked(h)
	if kept {
		delete(k.holds, h)
		delete(k.kept, h)
	}
	k.mu.Unlock()
	if kept {
		k.signal()
	}
	return kept
}

// letGoLater lets the holds of kept go a TTL from now (letGoAll), unless
// the Keeper is closed first.
func (k *Keeper[H]) letGoLater(kept []H) {
	id := &kept
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	stop := k.p.Clock.AfterFunc(k.p.TTL, func() {
		k.mu.Lock()
		delete(k.letGo, id)
		k.mu.Unlock()
		k.letGoAll(kept)
	})
	if k.letGo == nil {
		k.letGo = make(map[*[]H]func() bool)
	}
	k.letGo[id] = stop
}

// letGoAll lets go each of kept still kept (LetGo), and tells Release.
// A resume calls it a TTL after it kept them: a claim that no hold took
// over by then is released, so that an owner that does not lock again
// frees its key at most a TTL later than one that gave its hold up.
func (k *Keeper[H]) letGoAll(kept []H) {
	var gone []H
	for _, h := range kept {
		if k.LetGo(h) {
			gone = append(gone, h)
		}
	}
	k.release(gone)
}

// release tells Env.Release of each hold of holds.
func (k *Keeper[H]) release(holds []H) {
	if k.env.Release == nil {
		return
	}
	for _, h := range holds {
		k.env.Release(h)
	}
}
