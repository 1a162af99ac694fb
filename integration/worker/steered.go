package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// steered reports whether the worker's election is steered (Version,
// Priority or Preempt set).
func (c *Config) steered() bool { return c.Version != "" || c.Priority != 0 || c.Preempt > 0 }

// steering returns the election options Config's steering fields ask for.
func (c *Config) steering() []leader.Option {
	var opts []leader.Option
	if c.Version != "" {
		opts = append(opts, leader.WithVersion(c.Version), leader.WithVersionRule(nil))
	}
	if c.Priority != 0 {
		opts = append(opts, leader.WithPriority(c.Priority))
	}
	if c.Preempt > 0 {
		opts = append(opts, leader.WithPreemption(c.Preempt))
	}
	return opts
}

// runSteered campaigns with e under Election.Run until ctx ends. A
// steered term can be handed over (ErrPreempted) at any moment, and a
// term of Campaign's is released the moment its context is cancelled,
// while the worker may still rely on it; under Run the lease is released
// only once the term's function has returned, after the worker recorded
// the term's end. Each term is recorded as elect's are (without the
// proclamations), and lasts Config.HoldFor unless it ends first.
func (w *worker) runSteered(ctx context.Context, e *leader.Election) error {
	cfg := &w.cfg
	key := operator.LockKey(cfg.Key)
	for {
		err := e.Run(ctx, func(lctx context.Context) error {
			term, ok := leader.TermOf(lctx)
			if !ok {
				return errors.New("a term's function without a term (TermOf)")
			}
			h, deadline, stopWatch := w.beginTerm(lctx, e.ID(), key, term.Token)
			w.criticalSection(lctx, h)
			h.end(deadline, history.SrcPred)
			stopWatch()
			w.rec.forget(key, h.token)
			return nil
		})
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		case !sleepCtx(ctx, cfg.Gap):
			return nil
		}
	}
}

// announceMember records EvMember once e's own member status is listed
// live with the worker's version and priority, reading the members every
// poll interval until then, or until octx ends; in a goroutine counted
// in wg.
func (w *worker) announceMember(octx context.Context, wg *sync.WaitGroup, e *leader.Election) {
	cfg := &w.cfg
	wg.Go(func() {
		for sleepCtx(octx, max(cfg.Poll, 50*time.Millisecond)) {
			ms, err := e.Members(octx)
			if err == nil && slices.ContainsFunc(ms, func(m leader.Member) bool {
				return m.ID == e.ID() && m.Version == cfg.Version && m.Priority == cfg.Priority
			}) {
				w.emit(history.Event{Ev: history.EvMember, Owner: e.ID(), Version: cfg.Version, Priority: cfg.Priority})
				return
			}
		}
	})
}
