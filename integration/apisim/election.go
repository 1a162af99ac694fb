package apisim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/leader"
)

// campaign runs the process's candidate: it campaigns, leads a while,
// resigns (or, sometimes, transfers its leadership to another live
// member first), and again, until the incarnation ends.
func (inc *incarnation) campaign() {
	w := inc.p.w
	// Half the incarnations' candidates have a progress deadline, and
	// their terms' work reports progress (progress.go).
	var d time.Duration
	if w.chance(0.5) {
		d = max(w.rand(3*inc.p.cfg.TTL/10, 2*inc.p.cfg.TTL), dsync.MinTTL)
	}
	e, err := inc.ps.election("e", d)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	for inc.ctx.Err() == nil {
		time.Sleep(w.rand(0, 2*inc.p.cfg.TTL))
		if inc.ctx.Err() != nil {
			return
		}
		ctx, done := w.op(inc.ctx)
		if d == 0 && inc.relocking() {
			inc.leadRelocking(ctx, e)
		} else {
			inc.lead(ctx, e, d)
		}
		done()
	}
}

func (inc *incarnation) lead(ctx context.Context, e *leader.Election, d time.Duration) {
	w := inc.p.w
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	elected := false
	t := time.AfterFunc(inc.waitFor(), func() {
		mu.Lock()
		defer mu.Unlock()
		if !elected {
			cancel()
		}
	})
	defer t.Stop()
	call := time.Now()
	lctx, err := e.Campaign(cctx)
	mu.Lock()
	elected = err == nil
	mu.Unlock()
	w.count(outcome("election", err))
	if err != nil {
		return
	}
	info, _ := leader.TermOf(lctx)
	lost := make(chan struct{})
	stop := context.AfterFunc(lctx, func() { close(lost) })
	defer stop()
	h := &Hold{Who: e.ID(), Prim: PrimElection, Key: storedElection("e"), Token: info.Token, Call: call}
	if d > 0 {
		h.Progress = &ProgressLog{D: d, TTL: inc.p.cfg.TTL}
		leader.Progress(lctx)
	}
	giveUp := inc.hold(h, lost)
	stopProclaiming := inc.proclaim(lctx, e, info.Token)
	if d == 0 {
		sleepCtx(lctx, inc.holdFor())
	} else if inc.progressWork(lctx, lost, func() { leader.Progress(lctx) }, h.Progress, h.Start) {
		inc.stalled(h.Progress, errors.Is(context.Cause(lctx), leader.ErrStalled))
	}
	if lctx.Err() == nil && w.chance(0.3) {
		// The hold ends when the term's context is cancelled (lost), which
		// Transfer does before it releases.
		inc.transfer(e)
	}
	stopProclaiming()
	giveUp()
	rctx, rcancel := inc.unlockCtx()
	defer rcancel()
	_ = e.Resign(rctx)
}

// transfer hands the leadership of e, which leads, to another live
// member, if there is one, within unlockCtx's bound: when that ends
// first, e still leads, and resigns.
func (inc *incarnation) transfer(e *leader.Election) {
	w := inc.p.w
	ctx, cancel := inc.unlockCtx()
	defer cancel()
	ms, err := e.Members(ctx)
	if err != nil {
		return
	}
	var ids []string
	for _, m := range ms {
		if m.ID != e.ID() {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	to := ids[int(w.rand(0, time.Duration(len(ids))))]
	w.count(outcome("transfer", e.Transfer(ctx, to)))
}

// proclaim has e, which leads in lctx's term (of token), proclaim a new
// value now and then, 0 to a TTL apart, until the term ends or the
// returned function is called, which waits for it to stop: the values
// the watchers then read of the term (watch.go) have revisions to judge.
// Its draws come from a generator of its own, so that they do not move
// the world's.
func (inc *incarnation) proclaim(lctx context.Context, e *leader.Election, token uint64) (stop func()) {
	ctx, cancel := context.WithCancel(lctx)
	done := make(chan struct{})
	rng := rand.New(rand.NewPCG(uint64(inc.p.w.seed)^token, uint64(inc.p.id<<16|inc.n)))
	go func() {
		defer close(done)
		for k := 1; ; k++ {
			sleepCtx(ctx, time.Duration(rng.Int64N(int64(inc.p.cfg.TTL))))
			// A paused process runs no code: it proclaims when it resumes.
			if inc.p.waitRunning(ctx) != nil || ctx.Err() != nil {
				return
			}
			err := e.Proclaim(ctx, fmt.Sprintf("p%d/%d#%d-%d", inc.p.id, inc.n, token, k))
			inc.p.w.count(outcome("proclaim", err))
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
