package lockset

import (
	"fmt"
	"sync"

	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// holding is one Lock's holds, every member's, in the set's order, and the
// loss signal they share: closed at the first member's loss.
type holding struct {
	s     *Set
	holds []setcore.Hold

	mu    sync.Mutex
	lost  chan struct{}
	fired bool
	cause error // why the first member lost was, naming it
}

// newHolding returns the holding of holds (every member's) and reports
// whether none of them is lost: each is told to fire the signal from now
// on, and then looked at, so that a loss at any moment is seen by one or
// the other.
func newHolding(s *Set, holds []setcore.Hold) (*holding, bool) {
	h := &holding{s: s, holds: holds, lost: make(chan struct{})}
	for i, m := range holds {
		m.OnLost(func() { h.fire(i) })
	}
	for i, m := range holds {
		select {
		case <-m.Lost():
			h.fire(i)
		default:
		}
	}
	return h, !h.fired
}

// fire closes the loss signal for the member at i, lost.
func (h *holding) fire(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause == nil {
		m := h.s.members[i]
		h.cause = fmt.Errorf("lockset: %s %q lost: %w", m.kind, m.m.Key(), h.holds[i].Err())
	}
	if !h.fired {
		h.fired = true
		close(h.lost)
	}
}

// lostChan is the loss signal, once every member's deadline was looked at
// (a pause may have passed one unseen).
func (h *holding) lostChan() <-chan struct{} {
	for i, m := range h.holds {
		select {
		case <-m.Lost():
			h.fire(i)
		default:
		}
	}
	return h.lost
}

func (h *holding) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause
}

// startAll starts the members' progress deadlines: the holding is
// returned to the caller now.
func (h *holding) startAll() {
	for _, m := range h.holds {
		m.Start()
	}
}
