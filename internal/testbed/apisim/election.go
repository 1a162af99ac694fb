package apisim

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// campaign runs the process's candidate: it campaigns, leads a while,
// resigns, and again, until the incarnation ends.
func (inc *incarnation) campaign() {
	w := inc.p.w
	e, err := inc.ps.election("e")
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
		inc.lead(ctx, e)
		done()
	}
}

func (inc *incarnation) lead(ctx context.Context, e *leader.Election) {
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
	giveUp := inc.hold(&Hold{Who: e.ID(), Prim: PrimElection, Key: storedElection("e"), Token: info.Token, Call: call}, lost)
	sleepCtx(lctx, inc.holdFor())
	giveUp()
	rctx, rcancel := inc.unlockCtx()
	defer rcancel()
	_ = e.Resign(rctx)
}
