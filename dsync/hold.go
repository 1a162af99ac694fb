package dsync

import (
	"fmt"
	"sync"
	"time"
)

type holdState int

const (
	// holdPending: granted by the backend, not yet joined to its
	// session's keeper.
	holdPending holdState = iota
	holdActive            // valid until deadline
	holdLost              // ended without Unlock; lost is closed
	holdEnded             // ended by Unlock
)

// A hold is one acquisition of a Mutex: its claim, the session whose lease
// it shares, and its local deadline (the session's).
type hold struct {
	m      *Mutex
	claim  Claim
	keeper *keeper
	sess   *session
	lost   chan struct{} // closed when state becomes holdLost

	mu        sync.Mutex
	state     holdState
	deadline  time.Time   // local, monotonic: send time of the last confirmed write + TTL − margin
	stopTimer func() bool // stops the pending deadline timer
	lostErr   error       // why the hold was lost; wraps ErrLost
}

// start sets the first deadline, its session's, and arms the deadline
// timer. It reports false when the deadline has already passed.
func (h *hold) start(deadline time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.m.cfg.clock.Now()
	if !now.Before(deadline) {
		return false
	}
	h.state = holdActive
	h.deadline = deadline
	h.stopTimer = h.m.cfg.clock.AfterFunc(deadline.Sub(now), h.expireIfDue)
	return true
}

// extend records a renewal sent at sent that the backend confirmed. A
// confirmation that arrives after the current deadline does not count: by
// then the hold may already have been taken over.
func (h *hold) extend(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.m.cfg.clock.Now()
	if h.state != holdActive || !now.Before(h.deadline) {
		return
	}
	deadline := sent.Add(h.m.cfg.ttl - h.m.cfg.margin())
	if !deadline.After(h.deadline) {
		return
	}
	h.deadline = deadline
	h.stopTimer()
	h.stopTimer = h.m.cfg.clock.AfterFunc(deadline.Sub(now), h.expireIfDue)
}

// expireIfDue ends the hold as lost if its deadline has passed. The
// deadline timer calls it (a renewal may have moved the deadline since the
// timer was armed), and so do Lost and Unlock, which may run first after
// the process was paused.
func (h *hold) expireIfDue() {
	h.mu.Lock()
	expired := h.state == holdActive && !h.m.cfg.clock.Now().Before(h.deadline)
	h.mu.Unlock()
	if expired {
		h.lose(fmt.Errorf("%w: %q: no renewal confirmed before the local deadline", ErrLost, h.claim.Key))
	}
}

// lose ends an active hold without Unlock and closes lost.
func (h *hold) lose(reason error) {
	h.mu.Lock()
	if h.state != holdActive {
		h.mu.Unlock()
		return
	}
	h.state = holdLost
	h.lostErr = reason
	h.stopTimer()
	close(h.lost)
	h.mu.Unlock()

	h.keeper.remove(h)
	h.m.report(reason)
}

// end marks the hold ended by Unlock and returns why it was lost before,
// if it was.
//
// The deadline is checked here too, not only by its timer: a process that
// was paused past the deadline may run Unlock before the timer's function.
func (h *hold) end() error {
	h.expireIfDue()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == holdActive {
		h.stopTimer()
	}
	prev := h.state
	h.state = holdEnded
	if prev == holdLost {
		return h.lostErr
	}
	return nil
}

func (h *hold) active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == holdActive
}

func (h *hold) validUntil() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline
}
