package dsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/lease"
	"github.com/go-dsync/dsync/dsync/internal/progress"
)

// Progress deadlines (WithProgressDeadline): a lease proves that a process
// is alive, not that its work moves. A primitive value with a deadline
// keeps the clock reading of its last report of progress (Progress, or a
// new hold of the value), and one timer on its Client's clock; when the
// timer finds no report within the deadline, the value's holds are
// stalled: each ends as a lost hold ends (Lost closes, the loss is told
// and logged), its session stops counting it, and after the margin a
// lost lease gives (driver.Margin) its claim is released, so that the
// next waiter goes on; then the stall is recorded in the store, for
// dsync status. Reporting progress is one atomic store: no lock,
// no timer reset, no request to the store. The timer is lazy: when it
// fires and the last report has moved on, it is set again for the new
// report's deadline.

// maxProgressDeadline bounds WithProgressDeadline: a longer deadline is
// taken for a mistake of units.
const maxProgressDeadline = 30 * 24 * time.Hour

// WithProgressDeadline turns on a progress deadline for the holds of the
// value. The value is the Mutex, RWMutex or Semaphore it is given to. A
// hold of the value during which no progress was reported (Progress) for d
// is stalled. It ends as a lost hold ends: Lost() closes; the loss is
// logged at Warn, told to the error handler and to the Client's
// observer (event.Observer.Lost); Err and the unlock that follows (UnlockContext,
// RUnlockContext, ReleaseContext) return an error wrapping ErrLost and
// ErrStalled, and that unlock sends nothing. Then, TTL/20 after Lost()
// closed (the head start a lost lease gives its holder to stop), the claim
// is released, as an Unlock would release it, so that the next waiter holds
// without waiting for the lease to run out. Writes the stalled work makes
// after Lost() closed are not protected by the lock: fence them with the
// token (Token).
//
// Progress is the value's, not a goroutine's or a hold's: a report keeps
// every hold of the value alive, and taking a hold counts as a report. An
// RWMutex or Semaphore value shared by workers that should each be
// watched must be one value per worker. An RWMutex's read claim that
// lingers with no RLock holding it (WithReadLinger) is not watched.
//
// d may be shorter than the TTL: a stuck holder is then replaced sooner
// than a crashed one, and its work must report at least every d. 0, the
// default, turns the deadline off; otherwise d must lie between MinTTL
// and 30 days, and the constructor returns an error for a d outside.
func WithProgressDeadline(d time.Duration) Option {
	return func(c *config) error {
		if err := c.fits("WithProgressDeadline", primMutex, primRWMutex, primSemaphore); err != nil {
			return err
		}
		switch {
		case d < 0:
			return fmt.Errorf("dsync: WithProgressDeadline(%v): must not be negative", d)
		case d > 0 && d < MinTTL:
			return fmt.Errorf("dsync: WithProgressDeadline(%v): must be 0 (off) or at least %v", d, MinTTL)
		case d > maxProgressDeadline:
			return fmt.Errorf("dsync: WithProgressDeadline(%v): must be at most %v", d, maxProgressDeadline)
		}
		c.progress = d
		return nil
	}
}

// progressWatch is a primitive value's progress deadline
// (dsync/internal/progress), over its holds.
type progressWatch = progress.Watch[*hold]

// newProgressWatch returns the watch of a deadline of d on clock, or nil
// if d is 0 (off). Whether a hold stalls is holdStalls's decision; the
// holds that stall end in endStalled's order.
func newProgressWatch(d time.Duration, clock lease.Clock) *progressWatch {
	return progress.New(d, clock, progress.Hooks[*hold]{
		Active: (*hold).active,
		Stalls: holdStalls,
		Stalled: func(holds []*hold, last time.Time, since time.Duration) {
			endStalled(holds, last, fmt.Errorf("%w: %w: the last report was %v ago, the deadline is %v", ErrLost, ErrStalled, since, d))
		},
	})
}

// stall ends holds, of one primitive value, whose work reported no
// progress within the deadline (the last report was at last, a reading
// of the Client's Clock), as lost holds end, and then releases their
// claims. In this order:
//
//  1. A hold whose lease's deadline has passed too is lost to its lease
//     (expireIfDue), and is left to run out as any such hold.
//  2. The hold is lost (markStalled): Lost() closes, and an unlock from
//     then on returns the loss and sends nothing.
//  3. The loss is told, as a lost lease's is (TellLost): the handlers,
//     the log at Warn, the observer, an RWMutex's or Semaphore's Lost().
//  4. Its session stops counting it.
//  5. After the margin, the head start a lost lease gives between Lost()
//     and the store's expiry, its claim is released: an ordinary end (it
//     did hold), which wakes the next waiter as an unlock's does. An end
//     of unknown outcome is sent again in the background.
//  6. The stall is recorded in the store (driver.Roles.Stalls), after the
//     release, so that it never delays the handoff.
//
// Releasing before Lost() closes would let the next holder start while
// this one still believes it holds.
func stall(holds []*hold, last time.Time, reason error) {
	var ended []*hold
	for _, h := range holds {
		h.expireIfDue()
		if h.markStalled(reason) {
			ended = append(ended, h)
		}
	}
	for _, h := range ended {
		h.TellLost()
		h.keeper.Remove(h)
	}
	if len(ended) == 0 {
		return
	}
	p := ended[0].p
	p.cfg.clock.AfterFunc(p.client.cfg.lease.Margin, func() {
		p.client.inBackground(func() {
			for _, h := range ended {
				p.releaseStalled(h)
			}
			for _, h := range ended {
				p.recordStalled(h, last)
			}
		})
	})
}

// releaseClaim releases the claim of h, a hold lost while its session
// lives on (after, what ended it: a stall, a lapse of its key's segment),
// within the release timeout: an ordinary end (it did hold), which wakes
// the next waiter as an unlock's does.
func (p *core) releaseClaim(h *hold, after string) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.releaseTimeout())
	defer cancel()
	if err := p.client.end(ctx, h.claim, true); err != nil && !errors.Is(err, ErrClosed) {
		p.report(fmt.Errorf("dsync: release %q after %s: %w", p.key, after, err))
	}
}

// recordStalled records the stall of h, whose work last reported progress
// at last, within the release timeout.
func (p *core) recordStalled(h *hold, last time.Time) {
	h.mu.Lock()
	since := h.since
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.releaseTimeout())
	defer cancel()
	c := h.claim
	err := p.client.recordStall(ctx, driver.Stall{Key: c.Key, Token: c.Epoch, Owner: c.Owner, Session: c.Session, Nonce: c.Nonce,
		Since: since, LastProgress: last})
	if err != nil && !errors.Is(err, ErrClosed) {
		p.report(fmt.Errorf("dsync: record the stall of %q: %w", p.key, err))
	}
}

// Progress reports that the work under m's hold moves, for its progress
// deadline. See WithProgressDeadline. A report is one atomic store of the
// time: it sends nothing to the store and takes no lock. It may be called
// as often as the work likes, held or not. Without a deadline it does
// nothing.
func (m *Mutex) Progress() {
	m.mustBeMade()
	progressed(m.progress)
}

// Progress reports that the work under rw's holds, read and write, moves.
// It works as Mutex.Progress does: one report keeps every hold of rw alive.
func (rw *RWMutex) Progress() {
	rw.mustBeMade()
	progressed(rw.progress)
}

// Progress reports that the work under s's acquisitions moves. It works as
// Mutex.Progress does: one report keeps every acquisition of s alive.
func (s *Semaphore) Progress() {
	s.mustBeMade()
	progressed(s.progress)
}
