package lockset

import (
	"fmt"
	"sync"

	"github.com/go-dsync/dsync/dsync/internal/setcore"
)

// holding is one Lock's holds, every member's, in the set's order, and the
// loss signal they share: closed at the first member's loss. LockMore
// grows it (grow); its members, given and holds change together, under
// mu.
type holding struct {
	s     *Set
	track *tracker // the set's identity and notes while it holds

	mu      sync.Mutex
	members []Member
	given   []int // given[i] is the place in members of the i-th member given
	holds   []setcore.Hold
	lost    chan struct{}
	fired   bool
	cause   error // why the first member lost was, naming it
}

// newHolding returns the holding of holds (every member's) and reports
// whether none of them is lost: each is told to fire the signal from now
// on, and then looked at, so that a loss at any moment is seen by one or
// the other.
func newHolding(s *Set, members []Member, given []int, holds []setcore.Hold, tr *tracker) (*holding, bool) {
	h := &holding{s: s, track: tr, members: members, given: given, holds: holds, lost: make(chan struct{})}
	return h, h.watch(members, holds)
}

// watch has the members of holds fire h's loss signal from now on, and
// reports whether none of them is lost yet.
func (h *holding) watch(members []Member, holds []setcore.Hold) bool {
	for i, m := range holds {
		m.OnLost(func() { h.fire(members[i], m) })
	}
	none := true
	for i, m := range holds {
		select {
		case <-m.Lost():
			h.fire(members[i], m)
			none = false
		default:
		}
	}
	return none
}

// fire closes the loss signal for member m, lost with hold.
func (h *holding) fire(m Member, hold setcore.Hold) {
	h.fail(fmt.Errorf("lockset: %s %q lost: %w", m.kind, m.m.Key(), hold.Err()))
}

// fail closes the loss signal, with cause if it is the first.
func (h *holding) fail(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cause == nil {
		h.cause = cause
	}
	if !h.fired {
		h.fired = true
		close(h.lost)
	}
}

// view returns the members, given and holds, as of now.
func (h *holding) view() ([]Member, []int, []setcore.Hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.members, h.given, h.holds
}

// lostChan is the loss signal, once every member's deadline was looked at
// (a pause may have passed one unseen).
func (h *holding) lostChan() <-chan struct{} {
	members, _, holds := h.view()
	for i, m := range holds {
		select {
		case <-m.Lost():
			h.fire(members[i], m)
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

// startAll starts the progress deadlines of holds: they are returned to
// the caller now.
func startAll(holds []setcore.Hold) {
	for _, m := range holds {
		m.Start()
	}
}
