package leader

import (
	"context"
	"errors"
	"sync"
)

// One shard's life in a member: queue for its election, run fn while the
// shard is owned, give it up when asked, and never let fn run under a
// lease that is being released.

// shardRun is one shard this member has queued for: cancel ends its
// campaign, or its term, and done closes once the shard's goroutine is over.
type shardRun struct {
	cancel context.CancelFunc
	owned  bool   // the campaign won, and fn runs (or is about to)
	token  uint64 // the term's fencing token, once owned
	// stalled: owned, and fn reported no progress within the shard's
	// deadline, so its lease is released (WithProgressDeadline); fn
	// has not returned. Set under Partition.mu.
	stalled bool
	// leaving: the campaign's context was cancelled while it waited; a
	// campaign won meanwhile has its lease released, so fn must not run.
	// owned and leaving are decided under Partition.mu, one or the other.
	leaving bool
	// retaking: owned, and its term lost to an outage of the store; the
	// run campaigns again to take it back, and is listed as owning the
	// shard meanwhile (runTerm). Set under Partition.mu.
	retaking bool
	done     chan struct{}
}

// startLocked queues for shard s and runs fn while this member owns it.
// The campaign runs under a context of its own, not Run's: the Election
// releases a lease at once when its campaign context ends, so a term may
// end only after fn returned (then Resign), never before. p.mu is held.
func (p *Partition) startLocked(ctx context.Context, s int, fn func(context.Context, int) error, fail func(error)) {
	sctx, cancelCampaign := context.WithCancel(context.WithoutCancel(ctx))
	stop := make(chan struct{})
	var once sync.Once
	r := &shardRun{cancel: func() { once.Do(func() { close(stop) }) }, done: make(chan struct{})}
	p.running[s] = r
	p.shardsLive.Add(1)
	go func() {
		defer p.shardsLive.Done()
		defer close(r.done)
		defer cancelCampaign()
		go func() {
			select {
			case <-stop:
			case <-ctx.Done():
			}
			p.mu.Lock()
			leave := !r.owned || r.retaking
			r.leaving = leave
			p.mu.Unlock()
			if leave {
				cancelCampaign() // still waiting: leave the queue
			}
		}()
		for p.runTerm(ctx, sctx, s, r, stop, fn, fail) {
			// The term was lost to an outage of the store: campaign
			// again, which takes it back (partition_outage.go).
		}
	}()
}

// runTerm is one term of shard s's run r: it campaigns (sctx), runs fn
// while the term lasts, and gives the shard up. It reports whether the
// term was lost to an outage of the store (its lock kept) while r goes
// on: r then stays listed as owned, with its token, and the caller
// campaigns again, which takes the term back or learns that it ended.
func (p *Partition) runTerm(ctx, sctx context.Context, s int, r *shardRun, stop <-chan struct{}, fn func(context.Context, int) error, fail func(error)) (again bool) {
	tctx, err := campaignShard(sctx, p.shards[s])
	if err != nil {
		p.forget(s, r)
		return false
	}
	if partitionWonHook != nil {
		partitionWonHook(s)
	}
	info, _ := TermOf(tctx)
	p.mu.Lock()
	if r.leaving {
		// Won as the wait was given up: its context is cancelled, so
		// the Election releases the lease; fn must not run beside
		// the next owner.
		p.mu.Unlock()
		_ = p.shards[s].Resign(context.WithoutCancel(ctx))
		p.forget(s, r)
		return false
	}
	r.owned, r.token, r.retaking = true, info.Token, false
	p.mu.Unlock()
	fctx, cancelFn := context.WithCancelCause(tctx)
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		case <-fctx.Done(): // the lease lost: tctx's cause, ErrLeadershipLost or ErrStalled
			if errors.Is(context.Cause(tctx), ErrStalled) {
				p.stall(s, r)
			}
		}
		cancelFn(shardEndCause(ctx))
	}()
	err = fn(fctx, s)
	// An error fn returns once its context ended (ctx.Err(), say) is
	// the shard going away, not a failure of fn's own.
	own := fctx.Err() == nil
	cancelFn(ErrResigned) // fn gave the shard up
	if p.takesBack(ctx, s, r, tctx, stop) {
		return true
	}
	_ = p.shards[s].Resign(context.WithoutCancel(ctx))
	p.forget(s, r)
	if err != nil && own {
		fail(err)
	}
	return false
}

// takesBack reports whether run r of shard s campaigns again to take
// back its term (tctx), lost to an outage of the store with its lock
// kept, and marks r so: while r goes on (neither stopped nor Run ended).
func (p *Partition) takesBack(ctx context.Context, s int, r *shardRun, tctx context.Context, stop <-chan struct{}) bool {
	if !shardTakesBack(context.Cause(tctx)) || ctx.Err() != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-stop:
		return false
	default:
	}
	if p.running[s] != r || r.leaving {
		return false
	}
	r.retaking = true
	return true
}

// stall marks shard s's run r stalled, if r is still s's, and has this
// member's status say so at once: the others then assign the shard
// elsewhere, and this member neither lists it as owned nor queues for it
// again before fn returns.
func (p *Partition) stall(s int, r *shardRun) {
	p.mu.Lock()
	if p.running[s] == r {
		r.stalled = true
	}
	p.mu.Unlock()
	select {
	case p.nudge <- struct{}{}:
	default:
	}
}

// shardEndCause is why a shard's fn context ends, given Run's context
// ctx: Run's cause when Run ends (its stopAll hands every shard over
// then too), otherwise a handover.
func shardEndCause(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return ErrShardMoved
}

// partitionWonHook, if set (by tests only), is called right after a shard's
// campaign is won, before the run decides whether fn may run.
var partitionWonHook func(shard int)

// forget drops r from the running shards if it is still s's.
func (p *Partition) forget(s int, r *shardRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[s] == r {
		delete(p.running, s)
	}
}
