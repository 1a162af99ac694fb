package leader

import (
	"context"
	"errors"

	"github.com/go-dsync/dsync/leader/operator"
)

// Transfer requests (operator.RequestTransfer, dsync transfer): an operator asks
// the leader of a term to hand over to a candidate, by a directive in the
// member store. A leader whose member store serves Directives reads them
// (its term's alone where the store serves TransferRequests, which it
// prunes of the ended terms' once per term) once per heartbeat for as
// long as it leads, and acts with Transfer on
// the highest-numbered request of its term it has not acted on yet, each
// once, given three member max ages (nine heartbeats) to succeed; a newer
// request ends the Transfer of an older one. A request names a term, so
// one that lands late, after its term ended, is never acted on by a
// later leader.

// requestedTransferBound bounds a requested transfer, in member max ages
// (three heartbeats each): time for the candidates ahead to step aside
// and for the leader to see it, many times over.
const requestedTransferBound = 3

// requestsActed is the heartbeat's record of the transfer requests it
// acted on: only the heartbeat (one goroutine) reads or writes it.
type requestsActed struct {
	term uint64 // the term of the request acted on last
	// next is one more than the number (Gen) of that request: a request
	// of term numbered below it was acted on, or passed over for a later
	// one. 0: none of term.
	next uint64
	// stop ends the requested Transfer running, if any, so that a newer
	// request's goes on without waiting for it.
	stop context.CancelFunc
	// pruned is the term whose leader deleted the requests of the terms
	// before it (TransferRequests.PruneTransferRequests), or tried to.
	pruned uint64
}

// actOnTransferRequest reads the transfer requests of this candidate's
// term if it leads and its member store serves Directives
// (readTransferRequests), and starts a Transfer when the highest-numbered
// one was not acted on yet. Called by the heartbeat.
func (x *handoff) actOnTransferRequest(ctx context.Context) {
	e, acted := x.e, &x.requests
	ds, ok := e.cfg.members.(operator.Directives)
	if !ok {
		return
	}
	e.state.Lock()
	t := e.term
	e.state.Unlock()
	if t == nil || t.ctx.Err() != nil {
		return
	}
	all, err := x.readTransferRequests(ctx, ds, t.token, acted)
	if err != nil {
		e.cfg.logger.Warn("leader: read transfer requests", "election", e.name, "err", err)
		return
	}
	req, ok := latestTransferRequest(all, t.token)
	if !ok || (acted.term == t.token && req.Gen < acted.next) {
		return
	}
	if acted.stop != nil {
		acted.stop() // superseded: its Transfer returns, and withdraws its handover
	}
	acted.term, acted.next = t.token, req.Gen+1
	to, n := req.Member, req.Gen
	e.cfg.logger.Info("leader: transfer requested", "election", e.name, "term", t.token, "request", n, "to", to)
	// Bounded: a candidate that never queues (of an older release, not
	// campaigning) must not hold the handover, and every other Transfer
	// and preemption, for the rest of the term.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestedTransferBound*e.cfg.memberMaxAge())
	acted.stop = cancel
	// Transfer ends with the term (ErrNotLeader) if the handover does not
	// come first, and Close ends the term before it waits for the
	// background (e.wg, which the heartbeat calling this is part of).
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer cancel()
		// Of term t alone: if t has ended by the time this transfer gets
		// its turn (or ended during the read), a later term of this
		// candidate's is not the one the request named.
		if err := x.transfer(tctx, to, ErrTransferred, t, nil); err != nil && !errors.Is(err, ErrNotLeader) {
			e.cfg.logger.Warn("leader: requested transfer", "election", e.name, "term", t.token, "request", n, "to", to, "err", err)
		}
	}()
}

// readTransferRequests reads the transfer requests of term, this
// candidate's, of which there may be others too: by one read of the
// term's requests where ds serves TransferRequests, after deleting, at
// the first read of the term, those of the terms before it; else by
// Directives.
func (x *handoff) readTransferRequests(ctx context.Context, ds operator.Directives, term uint64, acted *requestsActed) ([]operator.Directive, error) {
	e := x.e
	tr, ok := ds.(operator.TransferRequests)
	if !ok {
		return ds.Directives(ctx, e.name)
	}
	if acted.pruned != term {
		acted.pruned = term
		if err := tr.PruneTransferRequests(ctx, e.name, term); err != nil {
			e.cfg.logger.Warn("leader: delete the transfer requests of ended terms", "election", e.name, "term", term, "err", err)
		}
	}
	return tr.TransferRequests(ctx, e.name, term)
}

// latestTransferRequest returns the transfer request of term in ds of
// the highest number (Gen); ok is false when term has none.
func latestTransferRequest(ds []operator.Directive, term uint64) (latest operator.Directive, ok bool) {
	for _, d := range ds {
		if d.Kind == operator.DirectiveTransfer && d.Term == term && (!ok || d.Gen > latest.Gen) {
			latest, ok = d, true
		}
	}
	return latest, ok
}
