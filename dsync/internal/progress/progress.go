// Package progress keeps a primitive value's progress deadline (dsync's
// WithProgressDeadline): the clock reading of the value's last report of
// progress, the holds it watches, and one timer on the Client's clock.
//
// The contract: a Watch of deadline d calls its Stalled hook with the
// watched holds that are still active (Hooks.Active) and that its Stalls
// hook finds stalled, once no report came for d (a report is Report, or
// Watch of a new hold); it then stops watching them. It calls Stalled
// outside its lock, at most once per hold watched. A hold unwatched
// (Unwatch) before its check is never passed to Stalled. Reporting
// progress is one atomic store: no lock, no timer reset, no request to
// the store. The timer is lazy: when it fires and the last report has
// moved on, it is set again for the new report's deadline. At most one
// timer runs at a time, and none while no hold is watched. A nil *Watch
// is a deadline that is off: Watch and Unwatch do nothing.
//
// It holds no knowledge of what a hold is or of what a stall does:
// package dsync passes those in (dsync/progress.go), and decides there
// whether a report counts and whether a hold stalls (dsync/planted.go).
package progress

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/lease"
)

// Hooks are what a Watch asks of the holds it watches, and tells of them.
type Hooks[H comparable] struct {
	// Active reports whether h still holds: a hold that does not (lost,
	// or ended by an unlock on its way) is dropped at the next check.
	Active func(h H) bool
	// Stalls reports whether h, an active hold, stalled: its work
	// reported no progress for since, and the deadline is d.
	Stalls func(h H, since, d time.Duration) bool
	// Stalled is told the holds found stalled at one check, whose work
	// last reported progress at last (a reading of the clock), since
	// before the check.
	Stalled func(holds []H, last time.Time, since time.Duration)
}

// A Watch is a primitive value's progress deadline: its last report and
// the holds it watches.
type Watch[H comparable] struct {
	d      time.Duration
	clock  lease.Clock
	hooks  Hooks[H]
	origin time.Time    // the reading of clock that last counts from
	last   atomic.Int64 // the last report, in nanoseconds since origin

	mu    sync.Mutex
	holds map[H]bool  // the value's holds it watches
	stop  func() bool // stops the timer; nil when none is set
	// timer counts the timers set: a check that finds another set
	// since its own (an unwatch stopped it too late, then a watch set
	// a new one) leaves that one be, so one timer runs at a time.
	timer uint64
}

// New returns the watch of a deadline of d on clock, or nil if d is 0
// (off).
func New[H comparable](d time.Duration, clock lease.Clock, hooks Hooks[H]) *Watch[H] {
	if d <= 0 {
		return nil
	}
	return &Watch[H]{d: d, clock: clock, hooks: hooks, origin: clock.Now(), holds: make(map[H]bool)}
}

// Report notes progress now.
func (w *Watch[H]) Report() {
	w.last.Store(int64(w.clock.Now().Sub(w.origin)))
}

// Deadline is the last report plus the deadline: the watched holds'.
func (w *Watch[H]) Deadline() time.Time {
	return w.origin.Add(time.Duration(w.last.Load()) + w.d)
}

// Watch counts h, a hold of the value that began (or a lingering read
// claim an RLock took again), as progress, and watches it.
func (w *Watch[H]) Watch(h H) {
	if w == nil {
		return
	}
	w.Report()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holds[h] = true
	if w.stop == nil {
		w.setLocked(w.d)
	}
}

// Unwatch stops watching h, which ended; with no hold left to watch, the
// timer is stopped.
func (w *Watch[H]) Unwatch(h H) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.holds, h)
	if len(w.holds) == 0 && w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

// check is the timer's: if no progress was reported within the deadline,
// it tells Stalled of the holds watched; otherwise it sets the timer for
// the last report's deadline.
func (w *Watch[H]) check(timer uint64) {
	w.mu.Lock()
	if timer != w.timer {
		w.mu.Unlock()
		return // a later timer is set: it checks
	}
	last := w.origin.Add(time.Duration(w.last.Load()))
	since := w.clock.Now().Sub(last)
	var stalled []H
	for h := range w.holds {
		if !w.hooks.Active(h) {
			delete(w.holds, h) // lost, or ended by an unlock on its way
			continue
		}
		if w.hooks.Stalls(h, since, w.d) {
			stalled = append(stalled, h)
			delete(w.holds, h)
		}
	}
	w.stop = nil
	if len(w.holds) > 0 {
		next := w.d
		if since < w.d {
			next = w.d - since
		}
		w.setLocked(next)
	}
	w.mu.Unlock()
	if len(stalled) > 0 {
		w.hooks.Stalled(stalled, last, since)
	}
}

// setLocked sets the timer to check in d; w.mu is held.
func (w *Watch[H]) setLocked(d time.Duration) {
	w.timer++
	timer := w.timer
	w.stop = w.clock.AfterFunc(d, func() { w.check(timer) })
}
