package leader

import (
	"context"
)

// Transfer requests (RequestTransfer, dsync transfer): an operator asks
// the leader of a term to hand over to a candidate, by a directive in the
// member store. A leader whose member store serves Directives reads them
// once per heartbeat, for as long as it leads and has not acted on a
// request of its term, and acts on the first it finds with Transfer,
// given three member max ages (nine heartbeats) to succeed. A
// request names a term, so one that lands late, after its term ended, is
// never acted on by a later leader; and one term has one request at most.

// requestedTransferBound bounds a requested transfer, in member max ages
// (three heartbeats each): time for the candidates ahead to step aside
// and for the leader to see it, many times over.
const requestedTransferBound = 3

// actOnTransferRequest reads the directives of this election if this
// candidate leads and its member store serves them, and starts a Transfer
// when one asks this term's leader to hand over. It acts once per term.
// Called by the heartbeat.
func (x *handoff) actOnTransferRequest(ctx context.Context) {
	e := x.e
	ds, ok := e.cfg.members.(Directives)
	if !ok {
		return
	}
	e.state.Lock()
	t := e.term
	e.state.Unlock()
	if t == nil || t.ctx.Err() != nil || x.requested.Load() == t.token {
		return
	}
	all, err := ds.Directives(ctx, e.name)
	if err != nil {
		e.cfg.logger.Warn("leader: read transfer requests", "election", e.name, "err", err)
		return
	}
	to := transferRequest(all, t.token)
	if to == "" {
		return
	}
	x.requested.Store(t.token) // only the heartbeat calls this: no other store races it
	e.cfg.logger.Info("leader: transfer requested", "election", e.name, "term", t.token, "to", to)
	// Transfer ends with the term (ErrNotLeader) if the handover does not
	// come first, and Close ends the term before it waits for the
	// background (e.wg, which the heartbeat calling this is part of).
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		// Bounded: a candidate that never queues (of an older release, not
		// campaigning) must not hold the handover, and every other
		// Transfer and preemption, for the rest of the term.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestedTransferBound*e.cfg.memberMaxAge())
		defer cancel()
		if err := e.Transfer(tctx, to); err != nil {
			e.cfg.logger.Warn("leader: requested transfer", "election", e.name, "term", t.token, "to", to, "err", err)
		}
	}()
}
