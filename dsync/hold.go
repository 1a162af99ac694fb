package dsync

import (
	"fmt"
	"sync"
	"time"
)

type holdState int

const (
	// holdPending: granted by the store, not yet joined to its session's
	// keeper.
	holdPending holdState = iota
	holdActive            // valid until its session's deadline
	holdLost              // ended without Unlock; lost is closed
	holdEnded             // ended by Unlock
)

// A hold is one acquisition of a primitive (a Mutex's, a reader's or
// writer's of an RWMutex, a Semaphore's): its claim and the session whose
// lease it shares. It is valid until its session's local deadline, and
// lost when the session is retired (its keeper sees to both): it has no
// timer of its own.
type hold struct {
	p      *core // the primitive it is a hold of
	claim  claimRef
	keeper *keeper
	sess   *session
	lost   chan struct{} // closed when state becomes holdLost

	mu      sync.Mutex
	state   holdState
	lostErr error // why the hold was lost; wraps ErrLost
	// since is when the hold began, on its primitive's clock; kind is
	// its primitive's (for the observer).
	since time.Time
	kind  Kind
}

// start makes the hold active. It reports false when the session's
// deadline has already passed.
func (h *hold) start(deadline time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.p.cfg.clock.Now().Before(deadline) {
		return false
	}
	h.state = holdActive
	h.since = h.p.cfg.clock.Now()
	return true
}

// expireIfDue retires the hold's session if its deadline has passed, which
// loses the hold. The session's deadline timer does that; Lost and Unlock
// call it too, since they may run first after the process was paused.
func (h *hold) expireIfDue() {
	if h.keeper != nil {
		h.keeper.expireIfDue(h.sess)
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
	h.lostErr = fmt.Errorf("%w (key %q)", reason, h.claim.Key)
	close(h.lost)
	h.mu.Unlock()

	h.keeper.remove(h)
	h.p.client.claimLost(h.claim.Nonce)
	h.p.reportLoss(h.lostErr)
	held, err := h.heldFor(), h.lostErr
	h.p.client.observe(func(o *Observer) {
		if o.Lost != nil {
			o.Lost(held, err)
		}
	})
	if h.p.lostHook != nil {
		h.p.lostHook(h)
	}
}

// end marks the hold ended by Unlock and returns why it was lost before,
// if it was. The deadline is checked here too (expireIfDue), and a session
// retired by another goroutine (its deadline timer, say, run at the same
// moment after a pause) loses the hold here even if that goroutine has
// not yet told its holds.
func (h *hold) end() error {
	h.expireIfDue()
	if h.keeper != nil {
		if why := h.keeper.retiredWith(h.sess); why != nil {
			h.lose(why) // nothing if it was told already
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
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

// validUntil is the hold's deadline: its session's.
func (h *hold) validUntil() time.Time {
	return h.keeper.deadline(h.sess)
}

// heldFor describes h for the observer, held until now.
func (h *hold) heldFor() Held {
	return Held{Key: h.p.key, Kind: h.kind, Token: h.claim.Token, Held: h.p.cfg.clock.Now().Sub(h.since)}
}
