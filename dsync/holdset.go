package dsync

import (
	"slices"
	"sync"
	"time"
)

// A holdSet is the holds a primitive has at once (the read and write holds
// of an RWMutex, the acquisitions of a Semaphore), in token order, and the
// loss signal they share: it closes when any of them is lost, and a new
// one starts once none is left.
type holdSet struct {
	mu    sync.Mutex
	holds []*hold // by token, lowest first
	lost  chan struct{}
	fired bool // lost is closed
	// err is why the first of the holds counted since the set was last
	// empty was lost; nil if none was (Err).
	err error
}

// add counts h, which may have been lost already.
func (s *holdSet) add(h *hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.holds) == 0 {
		s.lost, s.fired, s.err = make(chan struct{}), false, nil
	}
	i, _ := slices.BinarySearchFunc(s.holds, h.claim.Epoch, func(x *hold, t uint64) int {
		switch {
		case x.claim.Epoch < t:
			return -1
		case x.claim.Epoch > t:
			return 1
		}
		return 0
	})
	s.holds = slices.Insert(s.holds, i, h)
	select {
	case <-h.lost:
		s.fireLocked(h) // lost before it was counted
	default:
	}
}

// take removes and returns the holds pick chooses among those counted
// (lowest token first), or nil if it chooses none.
func (s *holdSet) take(pick func(holds []*hold) []int) []*hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := pick(s.holds)
	if len(idx) == 0 {
		return nil
	}
	out := make([]*hold, 0, len(idx))
	for _, i := range idx {
		out = append(out, s.holds[i])
		select {
		case <-s.holds[i].lost:
			s.noteLocked(s.holds[i]) // its onLost may not have run yet
		default:
		}
	}
	s.holds = slices.DeleteFunc(s.holds, func(h *hold) bool { return slices.Contains(out, h) })
	return out
}

// remove stops counting h; it reports false if h was not counted.
func (s *holdSet) remove(h *hold) bool {
	return s.take(func(holds []*hold) []int {
		if i := slices.Index(holds, h); i >= 0 {
			return []int{i}
		}
		return nil
	}) != nil
}

// onLost is the primitive's lostHook: a counted hold was lost.
func (s *holdSet) onLost(h *hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.holds, h) {
		s.fireLocked(h)
	}
}

// fireLocked closes the loss signal for h, a counted hold that was lost.
func (s *holdSet) fireLocked(h *hold) {
	s.noteLocked(h)
	if !s.fired {
		s.fired = true
		close(s.lost)
	}
}

// noteLocked keeps why h, a hold counted, was lost, unless an earlier
// loss was kept.
func (s *holdSet) noteLocked(h *hold) {
	if s.err == nil {
		s.err = h.err()
	}
}

// lostChan is the loss signal of the holds counted: closed when one of
// them was lost, or when none is counted.
func (s *holdSet) lostChan() <-chan struct{} {
	s.mu.Lock()
	holds := slices.Clone(s.holds)
	s.mu.Unlock()
	if len(holds) == 0 {
		return closedChan
	}
	for _, h := range holds {
		h.expireIfDue() // the timer may not have run yet after a pause
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.holds) == 0 {
		return closedChan
	}
	// A hold's own channel closes in the step that retires its session;
	// onLost runs a moment later, in the goroutine that retired it.
	for _, h := range s.holds {
		select {
		case <-h.lost:
			s.fireLocked(h)
		default:
		}
	}
	return s.lost
}

// lossErr is why the first of the holds counted since the set was last
// empty was lost (a deadline passed unseen is looked at first, as
// lostChan does), or nil if none was.
func (s *holdSet) lossErr() error {
	s.lostChan()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// newest returns the counted hold with the highest token, if any.
func (s *holdSet) newest() (*hold, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.holds) == 0 {
		return nil, false
	}
	return s.holds[len(s.holds)-1], true
}

// validUntil is the earliest deadline of the holds counted, on time.Now's
// scale (zero if none).
func (s *holdSet) validUntil(p *core) time.Time {
	s.mu.Lock()
	holds := slices.Clone(s.holds)
	s.mu.Unlock()
	var t time.Time
	for _, h := range holds {
		if u := p.validUntil(h); t.IsZero() || u.Before(t) {
			t = u
		}
	}
	return t
}

// weight is the sum of the weights of the holds counted.
func (s *holdSet) weight() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w int64
	for _, h := range s.holds {
		w += h.claim.Terms.Weight
	}
	return w
}
