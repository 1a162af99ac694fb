package dsync

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/backoff"
	"github.com/go-dsync/dsync/dsync/internal/ctxerr"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// How acquire judges its attempts: when to try again, after what pause,
// and what to return when it stops.

// attempts is one acquire's state across its attempts: the pause before
// the next, the last store error, the resets met.
type attempts struct {
	p       *core
	ctx     context.Context
	wait    bool
	backoff time.Duration
	lastErr error
	resets  int
}

// fail reports err and sleeps before the next attempt, doubling the
// pause each time; it reports whether to try again (false for a try, or
// when ctx ended first).
func (a *attempts) fail(err error) (retry bool) {
	a.lastErr = err
	a.p.report(err)
	if !a.wait {
		return false
	}
	ok := backoff.Sleep(a.p.cfg.clock, backoff.Jitter(a.backoff), a.ctx.Done())
	a.backoff = backoff.Next(a.backoff)
	return ok
}

// stop is what an attempt that ends the acquire returns: ctx's cause if
// it ended, otherwise err.
func (a *attempts) stop(err error) error { return a.p.failure(a.ctx, err, a.lastErr) }

// again fails with report (fail) and returns nil to try again, or what
// the acquire returns (stop) when it is not to.
func (a *attempts) again(report, err error) error {
	if !a.fail(report) {
		return a.stop(err)
	}
	return nil
}

// heldAhead judges a claim that met another holding or waiting ahead: a
// try's answer; for a Lock, a race lost for a place at the end of the
// queue, with many processes claiming at once: contention, not failure.
func (a *attempts) heldAhead(err error) error {
	if !a.wait {
		return err
	}
	if !backoff.Sleep(a.p.cfg.clock, backoff.Jitter(backoff.Min), a.ctx.Done()) {
		return ctxerr.Cause(a.ctx, a.lastErr, nil)
	}
	return nil
}

// retired judges the pause after the session a claim waited in was
// retired; renewed: a renewal of it was confirmed. A session the store
// renewed in time was answered: what grew the pause was trouble it
// outlived, so the new session's claim goes after the pause's floor (held
// at its cap, the pause added up to 2 s to every retirement on a slow
// store). A session never renewed says the store answers too late: the
// pause keeps growing, as after an error.
func (a *attempts) retired(renewed bool) {
	if renewed {
		a.backoff = backoff.Min
	}
}

// enterFailed judges a failure to get a session: nil to try again, or
// what the acquire returns.
func (a *attempts) enterFailed(err error) error {
	p, ctx := a.p, a.ctx
	switch {
	case errors.Is(err, ErrSpan), errors.Is(err, ErrClosed):
		return err // a configuration error, or the end: retrying cannot mend it
	case ctx.Err() != nil:
		return ctxerr.Cause(ctx, a.lastErr, err)
	}
	return a.again(fmt.Errorf("dsync: acquire %q: %w", p.key, err), err)
}

// claimFailed judges an attempt whose claim did not come to hold (live:
// its session had not been retired): nil to try again, or what the
// acquire returns.
func (a *attempts) claimFailed(err error, live bool) error {
	p, ctx := a.p, a.ctx
	switch {
	case errors.Is(err, ErrSpan):
		return err
	case errors.Is(err, ErrHeld):
		return a.heldAhead(err)
	case ctx.Err() != nil:
		return ctxerr.Cause(ctx, a.lastErr, err)
	case (queue.IsLapsed(err) || errors.Is(err, errNotStarted)) && live:
		// The key's segment lapsed under the claim (see dsync/internal/queue),
		// or the hold could not start in its session: the claim was given
		// up; queue again.
		return nil
	case errors.Is(err, ErrReset) && live:
		if a.resets++; a.resets > 1 {
			if err := a.again(fmt.Errorf("dsync: acquire %q: %w", p.key, err), err); err != nil {
				return err
			}
		}
		p.report(fmt.Errorf("dsync: acquire %q: queueing again: %w", p.key, err))
		return nil
	case !live:
		// The session was retired while we waited: its claim is
		// withdrawn; queue again in a new one.
		return a.again(err, err)
	}
	return a.again(fmt.Errorf("dsync: acquire %q: %w", p.key, err), err)
}
