package leader

import (
	"context"
	"errors"
)

// Leaving a partition: the end of Run, Resign and Close all hand every
// shard over the same way.

// beginRun registers a Run that stop ends, and returns the channel to
// close once it has handed everything over.
func (p *Partition) beginRun(stop context.CancelCauseFunc) (chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, ErrClosed
	case p.stopRun != nil:
		return nil, ErrCampaigning
	}
	p.stopRun, p.runDone = stop, make(chan struct{})
	return p.runDone, nil
}

// leave ends the Run whose ctx ended: every shard is handed over (stopAll),
// then this member's status is removed, so the others assign its shards
// at their next heartbeat, and done is closed. The removal is bounded by
// the release timeout: a store that hangs must not keep Run, Resign and
// Close from returning, and a status left behind ages out (liveFor). A
// removal that lands late, after the next Run's first status write, is
// mended by that Run's next tick (it writes its status again).
func (p *Partition) leave(ctx context.Context, done chan struct{}) {
	p.stopAll()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.release)
	_ = p.members.DeleteMember(dctx, p.name, p.self)
	cancel()
	p.beat = lastBeat{} // the next Run writes its status at its first tick
	p.mu.Lock()
	p.stopRun, p.runDone = nil, nil
	p.mu.Unlock()
	close(done)
}

// stopAll hands every shard over and waits until every fn has returned
// and its lease was released (or left to run out, when lost): also those
// of shards handed over earlier and still finishing.
func (p *Partition) stopAll() {
	p.mu.Lock()
	for _, r := range p.running {
		r.cancel()
	}
	p.mu.Unlock()
	p.shardsLive.Wait()
}

// Resign leaves the partition gracefully, handing its shards over.
//
// The Run under way ends (it returns ErrResigned). Before that, Resign
// cancels the context of every shard's fn, waits for each fn to return, and
// releases each lease, so that no member waits for a lease to expire. Its
// status is removed last, and the other members take its shards at their
// next heartbeat. Resign returns once that is done, or with
// context.Cause(ctx) when ctx ends first (the handover goes on). It does
// nothing when no Run is under way; a later Run joins again.
func (p *Partition) Resign(ctx context.Context) error {
	p.mustBeMade()
	p.mu.Lock()
	stop, done := p.stopRun, p.runDone
	p.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop(ErrResigned)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Close leaves the partition as Resign does, and closes the shards'
// elections.
//
// It waits until the handover is done: each fn has returned. Each release
// is bounded by the TTL. The removal of this member's status is then
// bounded by the release timeout (dsync.DefaultReleaseTimeout, or the TTL
// if shorter). Use Resign first to bound the wait for the fns. The
// Partition cannot be used afterwards: Run returns ErrClosed.
func (p *Partition) Close() error {
	p.mustBeMade()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	stop, done := p.stopRun, p.runDone
	p.mu.Unlock()
	if stop != nil {
		stop(ErrResigned)
		<-done
	}
	p.stopAll()
	var errs []error
	for _, e := range p.shards {
		errs = append(errs, e.Close())
	}
	return errors.Join(errs...)
}
