package dsync

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/event"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

type holdState int

const (
	// holdPending: granted by the store, not yet joined to its session's
	// keeper (lease.Keeper.Join).
	holdPending holdState = iota
	holdActive            // valid until its session's deadline
	holdLost              // ended without Unlock; lost is closed
	holdEnded             // ended by Unlock
)

// A hold is one acquisition of a primitive (a Mutex's, a reader's or
// writer's of an RWMutex, a Semaphore's): its claim and the session whose
// lease it shares. It is valid until its session's local deadline, and
// lost when the session is retired (its keeper sees to both: it is the
// keeper's lease.Hold), or, where its primitive has a progress deadline,
// when its primitive's timer stalls it (progress.go).
type hold struct {
	p      *core // the primitive it is a hold of
	claim  queue.Ref
	keeper *keeper       // the Client's
	sess   *session      // the session it was made in
	lost   chan struct{} // closed when state becomes holdLost
	// idle: a read claim that lingers with no RLock holding it
	// (rwlinger.go): its loss is nobody's to hear of.
	idle atomic.Bool
	// onLost, if set, is told of the hold's loss after lostHook: its
	// lock set's (setmember.go).
	onLost atomic.Pointer[func()]
	// keptEnded: the claim, kept by a resume, was released (endKept).
	keptEnded atomic.Bool

	mu      sync.Mutex
	state   holdState
	lostErr error     // why the hold was lost; wraps ErrLost
	lostAt  time.Time // when, on its primitive's clock
	// since is when the hold began, on its primitive's clock; kind is
	// its primitive's (for the observer).
	since time.Time
	kind  event.Kind
}

// Key is the key of h's claim, Ref the claim (lease.Hold).
func (h *hold) Key() string    { return h.claim.Key }
func (h *hold) Ref() queue.Ref { return h.claim }

// Start makes the hold active. It reports false when the session's
// deadline has already passed (lease.Hold).
func (h *hold) Start(deadline time.Time) bool {
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
	h.keeper.ExpireIfDue(h.sess)
}

// MarkLost ends an active hold without Unlock, tells its Client (its
// claim gets no end) and closes lost; it reports whether it did. A keeper
// calls it under its lock, in the step that retires the hold's session
// (lease's retireLocked), so that no one sees the session over and the
// hold still active. The Client learns of the loss before lost closes: a
// program that calls Close as soon as Lost closes must find the hold lost
// there too, or Close would send it an end (the Client's lock is taken
// under no other, so taking it here is safe).
func (h *hold) MarkLost(reason error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != holdActive {
		return false
	}
	h.loseLocked(reason)
	h.p.client.claimLost(h.claim.Nonce, true)
	close(h.lost)
	return true
}

// markStalled ends an active hold whose work reported no progress within
// its primitive's deadline, as MarkLost ends one whose lease ran out, and
// reports whether it did. Unlike MarkLost, it leaves the Client's claim
// live: the stall releases it (progress.go), and Close, if it comes
// first, ends it. An unlock after it returns the loss and sends nothing.
func (h *hold) markStalled(reason error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != holdActive {
		return false
	}
	h.loseLocked(reason)
	close(h.lost)
	return true
}

// loseLocked marks h lost, for reason; h.mu is held.
func (h *hold) loseLocked(reason error) {
	h.state, h.lostAt = holdLost, h.p.cfg.clock.Now()
	h.lostErr = fmt.Errorf("%w (key %q)", reason, h.claim.Key)
}

// err is why h was lost before it ended, nil if it was not.
func (h *hold) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostErr
}

// TellLost reports the loss of a hold that MarkLost ended: to its
// primitive's handlers and the observers. It runs under no lock, since it
// calls the user's handlers (lease.Hold).
func (h *hold) TellLost() {
	if h.idle.Load() {
		return
	}
	h.p.reportLoss(h.lostErr)
	held, err := h.heldFor(), h.lostErr
	h.p.client.observe(func(o *event.Observer) {
		if o.Lost != nil {
			o.Lost(held, err)
		}
	})
	if h.p.lostHook != nil {
		h.p.lostHook(h)
	}
	if f := h.onLost.Load(); f != nil {
		(*f)()
	}
}

// end marks the hold ended by Unlock and returns why it was lost before,
// if it was. The deadline is checked here too (expireIfDue): a hold whose
// deadline has passed is lost, whether this call or another goroutine
// (its session's deadline timer, say, run at the same moment after a
// pause) judged its session over, since the keeper loses the holds of a
// session in the step that judges it over.
func (h *hold) end() error {
	h.expireIfDue()
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.state
	h.state = holdEnded
	if prev == holdLost {
		return h.lostErr
	}
	return nil
}

// renewSince makes now the hold's beginning (a lingering read claim
// taken again: rwlinger.go).
func (h *hold) renewSince() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = h.p.cfg.clock.Now()
}

func (h *hold) active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state == holdActive
}

// validUntil is the hold's deadline: its session's, or its value's
// progress deadline if earlier; once the hold is lost, when it was, if
// earlier still, as a session renewed for other holds outlives it.
func (h *hold) validUntil() time.Time {
	dl := h.keeper.Deadline(h.sess)
	if w := h.p.progress; w != nil && !h.idle.Load() {
		if p := w.Deadline(); p.Before(dl) {
			dl = p
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == holdLost && h.lostAt.Before(dl) {
		return h.lostAt
	}
	return dl
}

// heldFor describes h for the observer, held until now.
func (h *hold) heldFor() event.Held {
	return event.Held{Key: h.p.key, Kind: h.kind, Token: h.claim.Epoch, Held: h.p.cfg.clock.Now().Sub(h.since)}
}
