package leader

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// A term, one leadership of this candidate: how a campaign begins it
// (after the member store's preflight, when it has one),
// and how it is given up.

// term is one leadership of this candidate.
type term struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once the lock is given up
	token  uint64        // the term's fencing token
	// fnDone, for a term run by Run, is closed when fn has returned: the
	// lock is released only then, so the next leader never overlaps it.
	fnDone chan struct{}
	// givingUp is set by whoever gives the lock up (giveUp): Resign, in
	// its caller's goroutine, or the term's watch. The other waits for
	// done, Resign only as long as its context lives.
	givingUp atomic.Bool
}

// campaign waits until this candidate leads, and begins its term
// (managed: a term of Run's, whose lock is given up only once fn has
// returned). If Close ran meanwhile, the lock is given up at once and
// campaign returns ErrClosed.
func (e *Election) campaign(ctx context.Context, managed bool) (*term, error) {
	cctx, stop, first, err := e.beginCampaign(ctx)
	if err != nil {
		return nil, err
	}
	if first && e.cfg.members != nil {
		// Report this member before it can lead, so that whoever sees it
		// lead can also read its status (version).
		wctx, cancel := e.storeCall(cctx)
		if err := e.writeMember(wctx); err != nil {
			e.cfg.logger.Warn("leader: campaign: report this member's status", "election", e.name, "err", err)
		}
		cancel()
	}

	retaking, token := e.keptTerm()
	if retaking {
		// The last term was lost to an outage of the store, its lock kept
		// (term_resume.go): take it back, or learn that the outage ended it.
		err = e.mu.LockContext(cctx)
	} else if err = e.preflight(cctx); err == nil {
		err = e.xfer.lockInTurn(cctx)
	}
	stop(nil)

	e.state.Lock()
	e.campaigning = false
	e.stopCampaign = nil
	e.settleKeptLocked(retaking, err)
	if e.closed && (err == nil || e.kept) {
		// Close ran while this candidate was being elected, or while it
		// waited to take back a kept lock.
		e.kept = false
		e.state.Unlock()
		e.unlockQuietly(context.Background())
		return nil, ErrClosed
	}
	if err != nil {
		e.state.Unlock()
		if retaking {
			return nil, e.retakeErr(err, token)
		}
		return nil, err
	}
	t, info := e.beginTermLocked(ctx, managed)
	e.state.Unlock()

	e.heartbeatNow()
	e.observe(Transition{Election: e.name, Leading: true, Term: info.Token})
	if e.cfg.onElected != nil {
		e.cfg.onElected(info)
	}
	return t, nil
}

// beginCampaign marks this candidate as campaigning, once the previous
// term (if it is over) has given its lock up, and starts the background
// (first: for the first time). It returns the campaign's context, which
// Close cancels, or why this candidate may not campaign.
func (e *Election) beginCampaign(ctx context.Context) (cctx context.Context, stop context.CancelCauseFunc, first bool, err error) {
	e.state.Lock()
	if err := e.awaitGivenUpLocked(ctx); err != nil {
		e.state.Unlock()
		return nil, nil, false, err
	}
	defer e.state.Unlock()
	switch {
	case e.closed:
		return nil, nil, false, ErrClosed
	case e.campaigning || e.term != nil:
		return nil, nil, false, ErrCampaigning
	}
	e.campaigning = true
	cctx, stop = context.WithCancelCause(ctx)
	e.stopCampaign = stop
	first = !e.background
	e.startBackground()
	return cctx, stop, first, nil
}

// awaitGivenUpLocked waits, e.state held (and released while it
// waits), until no lock is being given up: the previous term's, if it is
// over (rather than report this candidate as still leading), or a kept
// lock Resign releases (resignKept: a campaign must not lock the Mutex
// while Resign unlocks it). It returns ctx's cause if ctx ends first.
func (e *Election) awaitGivenUpLocked(ctx context.Context) error {
	for {
		wait := e.releasing
		if t := e.term; t != nil && t.ctx.Err() != nil && !e.campaigning {
			wait = t.done
		}
		if wait == nil {
			return nil
		}
		e.state.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			e.state.Lock()
			return context.Cause(ctx)
		}
		e.state.Lock()
	}
}

// beginTermLocked starts the term this candidate was just elected to,
// under ctx (the campaign's parent), and its watch; e.state is held.
func (e *Election) beginTermLocked(ctx context.Context, managed bool) (*term, Info) {
	if tok := e.mu.Token(); tok != e.procTerm {
		e.procTerm, e.proclaimed, e.rev = tok, e.cfg.value, 0
	} // else the same term, taken back after an outage: its value is kept
	ref := &termRef{e: e, token: e.procTerm}
	lctx, cancel := context.WithCancelCause(context.WithValue(ctx, termKey{}, ref))
	info := e.selfInfoLocked()
	t := &term{ctx: lctx, cancel: cancel, done: make(chan struct{}), token: info.Token}
	if managed {
		t.fnDone = make(chan struct{})
	}
	e.term = t
	e.wg.Add(1)
	go e.watch(t, leaseLost(e.mu.Lost()))
	return t, info
}

// watch ends term t when its lease is lost or its context ends, and gives
// the lock up. A lost lease is left to run out: the margin between the
// local deadline and its expiry in the store is what lets the work under
// the cancelled context stop before another leader starts. Otherwise the
// lease is released — at once for Campaign, so other candidates need not
// wait for the TTL, and after fn returns for Run.
func (e *Election) watch(t *term, lost <-chan struct{}) {
	defer e.wg.Done()
	select {
	case <-lost:
		t.cancel(e.lostCause())
	case <-t.ctx.Done():
		if t.fnDone != nil {
			<-t.fnDone
		}
	}
	if keepsLock(context.Cause(t.ctx)) && t.givingUp.CompareAndSwap(false, true) {
		if keepingHook != nil {
			keepingHook()
		}
		e.keep(t) // lost to an outage: the next campaign takes it back
	} else {
		e.giveUp(context.Background(), t)
	}
	<-t.done
	e.heartbeatSoon()
	if e.cfg.onLost != nil {
		e.cfg.onLost(context.Cause(t.ctx))
	}
}

// giveUp gives term t's lock up, once t's context is cancelled: whoever
// wins t.givingUp, Resign or the term's watch, releases it (or leaves a
// lost lease to run out) within ctx and the TTL, and closes t.done. For
// the other, it returns at once: it waits for t.done as it can (a Resign
// whose context ends returns then, without waiting for the release).
// Resign takes t.givingUp before it cancels t, so the watch that the
// cancel wakes never sends a release that Resign means to send.
func (e *Election) giveUp(ctx context.Context, t *term) {
	if t.givingUp.CompareAndSwap(false, true) {
		e.release(ctx, t)
	}
}

// release gives term t's lock up for whoever won t.givingUp, and closes
// t.done.
func (e *Election) release(ctx context.Context, t *term) {
	e.observe(Transition{Election: e.name, Term: t.token, Cause: context.Cause(t.ctx)})
	e.unlockQuietly(ctx)
	e.state.Lock()
	e.term = nil
	e.state.Unlock()
	close(t.done)
}

// unlockQuietly releases the lock within ctx and the TTL, and logs a
// failure, unless ctx ended: a release cut short goes on in the
// Client's background (dsync's resender).
func (e *Election) unlockQuietly(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, clienthook.ClientParams(e.client).TTL)
	defer cancel()
	if err := e.mu.UnlockContext(ctx); err != nil && !errors.Is(err, dsync.ErrLost) && ctx.Err() == nil {
		e.cfg.logger.Warn("leader: give up leadership", "election", e.name, "err", err)
	}
}

// preflight asks the member store, if it checks, whether this candidate
// may campaign. A refusal (ErrRefused) ends the campaign; the store
// failing to answer does not: it is logged and asked again, with
// backoff, until ctx ends (then its cause, as Campaign documents).
func (e *Election) preflight(ctx context.Context) error {
	p, ok := e.cfg.members.(Preflighter)
	if !ok {
		return nil
	}
	backoff := preflightBackoff
	for {
		pctx, cancel := e.storeCall(ctx)
		err := p.Preflight(pctx, e.name)
		cancel()
		switch {
		case err == nil || errors.Is(err, ErrRefused):
			return err
		case ctx.Err() != nil:
			return context.Cause(ctx)
		}
		e.cfg.logger.Warn("leader: preflight", "election", e.name, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		backoff = min(2*backoff, maxPreflightBackoff)
	}
}

// storeCall bounds a campaign's call to its member store (its first
// status write, each preflight) as a Lock bounds its first call to the
// store, the opening of its session: to the TTL less the margin. A
// campaign whose server cannot be reached then says why as soon as a
// Lock of the same Client would, not after the driver gives up (MongoDB's
// server selection timeout: 30 s by default).
func (e *Election) storeCall(ctx context.Context) (context.Context, context.CancelFunc) {
	ttl := clienthook.ClientParams(e.client).TTL
	return context.WithTimeout(ctx, ttl-driver.Margin(ttl))
}

// The waits between two preflights whose store failed to answer.
const (
	preflightBackoff    = 50 * time.Millisecond
	maxPreflightBackoff = 2 * time.Second
)
