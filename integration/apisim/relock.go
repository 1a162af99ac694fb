package apisim

import (
	"context"
	"errors"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// Holders that take back what a store outage took (outage runs only):
// about half the Mutex holders, when Lost() closes with the hold lost to
// a suspension (ErrSuspended), call LockContext again on the same Mutex
// without Unlock, and about half the candidates, when their term's
// context ends so, call Campaign again on the same Election. Each such
// call is a Relock in the history, which check_outage.go judges.

// Relock is a call that took back a hold or term lost in an outage of
// the store: LockContext on the same Mutex, or Campaign on the same
// Election, made when the loss was seen.
type Relock struct {
	Proc int
	Prim Prim
	Key  string // as stored
	// Lost is the hold (or term) lost; Held the one the call returned
	// with (nil: it returned an error).
	Lost, Held   *Hold
	Call, Return time.Time
	Err          error
	// CtxEnded: the call's own context ended first (an error of no
	// verdict).
	CtxEnded bool
	// Unlocked: the call returned its context's cause, yet the Mutex no
	// longer held the lost hold (LockContext leaves it unchanged then).
	Unlocked bool
}

// relocking draws whether a holder of an outage run takes back what an
// outage takes from it (no draw in other runs).
func (inc *incarnation) relocking() bool {
	return inc.p.w.grace > 0 && inc.p.w.chance(0.5)
}

// relockCtx bounds a Relock: the verdict comes within the grace and a
// TTL of the deadline, and the store's answers after.
func (inc *incarnation) relockCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, inc.p.w.grace+4*inc.p.cfg.TTL)
}

// record adds r to the history, its call returned now with err and held.
func (inc *incarnation) recordRelock(r *Relock, held *Hold, err error, ctxEnded bool) {
	w := inc.p.w
	w.mu.Lock()
	r.Return, r.Held, r.Err, r.CtxEnded = time.Now(), held, err, ctxEnded
	w.hist.Relocks = append(w.hist.Relocks, r)
	w.fig.Relocks++
	if err == nil {
		w.fig.Resumed++
	}
	w.mu.Unlock()
	w.tracef("p%d RELOCK %s after #%d: %v", inc.p.id, r.Key, r.Lost.ID, err)
}

// holdLong is how long a holder that takes back what an outage took
// keeps its hold: longer than holdFor's, so that outages come while it
// holds.
func (inc *incarnation) holdLong() time.Duration {
	return inc.p.w.rand(inc.p.cfg.TTL, 8*inc.p.cfg.TTL)
}

// holdMutex keeps m's hold h (whose giveUp is given) for the holder's
// time, taking it back with LockContext each time it is lost to a
// suspension; it returns whether m is still locked (to be unlocked).
func (inc *incarnation) holdMutex(ctx context.Context, m *dsync.Mutex, h *Hold, giveUp func()) (locked bool) {
	until := time.Now().Add(inc.holdLong())
	for {
		waitLost(ctx, m.Lost(), max(time.Until(until), 0))
		if ctx.Err() != nil || !time.Now().Before(until) || !errors.Is(m.Err(), dsync.ErrSuspended) {
			giveUp()
			return true
		}
		giveUp()
		r := &Relock{Proc: inc.p.id, Prim: PrimMutex, Key: h.Key, Lost: h, Call: time.Now()}
		rctx, cancel := inc.relockCtx(ctx)
		err := m.LockContext(rctx)
		ctxEnded := rctx.Err() != nil && err != nil && !errors.Is(err, dsync.ErrLost)
		cancel()
		inc.p.w.count(outcome("mutex re-lock", err))
		if err != nil {
			// Still locked only if no verdict came: then m is unchanged,
			// and still holds the lost hold's token (0 when unlocked).
			r.Unlocked = ctxEnded && m.Token() != h.Token
			inc.recordRelock(r, nil, err, ctxEnded)
			return ctxEnded && !r.Unlocked
		}
		// The same claim, queued at the first Lock's call.
		next := &Hold{Who: h.Who, Prim: PrimMutex, Key: h.Key, Token: m.Token(), Call: h.Call, Try: h.Try, Resumes: h}
		giveUp = inc.hold(next, m.Lost())
		inc.recordRelock(r, next, nil, false)
		h = next
		if !time.Now().Before(until) {
			until = time.Now().Add(inc.p.w.rand(0, inc.p.cfg.TTL))
		}
	}
}

// leadRelocking is lead for a candidate that takes back a term lost to a
// suspension of its lease: it campaigns, leads a while, and each time its
// term's context ends with a cause wrapping dsync.ErrSuspended it calls
// Campaign again on e; then it resigns.
func (inc *incarnation) leadRelocking(ctx context.Context, e *leader.Election) {
	w := inc.p.w
	wctx, cancel := context.WithTimeout(ctx, inc.waitFor())
	call := time.Now()
	lctx, err := e.Campaign(wctx)
	w.count(outcome("election", err))
	if err != nil {
		cancel()
		return
	}
	defer cancel()
	until := time.Now().Add(inc.holdLong())
	h := inc.term(lctx, e, call, nil)
	for {
		stopProclaiming := inc.proclaim(lctx, e, h.token)
		sleepCtx(lctx, time.Until(until))
		stopProclaiming()
		h.giveUp()
		if lctx.Err() == nil || !errors.Is(context.Cause(lctx), dsync.ErrSuspended) || ctx.Err() != nil {
			break
		}
		r := &Relock{Proc: inc.p.id, Prim: PrimElection, Key: h.hold.Key, Lost: h.hold, Call: time.Now()}
		rctx, rcancel := inc.relockCtx(ctx)
		lctx, err = e.Campaign(rctx)
		ctxEnded := rctx.Err() != nil && err != nil && !errors.Is(err, dsync.ErrLost)
		rcancel()
		w.count(outcome("election re-campaign", err))
		if err != nil {
			inc.recordRelock(r, nil, err, ctxEnded)
			break
		}
		h = inc.term(lctx, e, h.hold.Call, h.hold)
		inc.recordRelock(r, h.hold, nil, false)
		if !time.Now().Before(until) {
			until = time.Now().Add(w.rand(0, inc.p.cfg.TTL))
		}
	}
	rctx, rcancel := inc.unlockCtx()
	defer rcancel()
	_ = e.Resign(rctx)
}

// termHold is a term under way as the history records it.
type termHold struct {
	hold   *Hold
	token  uint64
	giveUp func()
}

// term records the term of lctx, whose Campaign was called at call;
// resumes is the term it took back (nil: none).
func (inc *incarnation) term(lctx context.Context, e *leader.Election, call time.Time, resumes *Hold) termHold {
	info, _ := leader.TermOf(lctx)
	lost := make(chan struct{})
	stop := context.AfterFunc(lctx, func() { close(lost) })
	h := &Hold{Who: e.ID(), Prim: PrimElection, Key: storedElection("e"), Token: info.Token, Call: call, Resumes: resumes}
	giveUp := inc.hold(h, lost)
	return termHold{hold: h, token: info.Token, giveUp: func() { giveUp(); stop() }}
}
