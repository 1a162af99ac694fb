package apisim

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// campaign runs the process's candidate: it campaigns, leads a while,
// resigns (or, sometimes, transfers its leadership to another live
// member first), and again, until the incarnation ends.
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
	if lctx.Err() == nil && w.chance(0.3) {
		// The hold ends when the term's context is cancelled (lost), which
		// Transfer does before it releases.
		inc.transfer(e)
	}
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
