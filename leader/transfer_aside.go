package leader

import (
	"context"
	"errors"
	"github.com/go-dsync/dsync/leader/internal/lease"
	"slices"
)

// Transfer, the waiting candidates' side: a candidate whose claim waits
// ahead of the one a leader hands over to (its status's Handover) steps
// aside: it withdraws its claim and claims again, which puts it behind.
// It stays a candidate, and only its place in the queue changes: the
// grant rule is the lock's, as always.

// errStepAside ends a candidate's wait for the lock so that it claims
// again (lockInTurn); callers never see it.
var errStepAside = errors.New("leader: step aside for a transfer")

// lockInTurn is campaign's wait for the lock: LockContext, claimed again
// each time the candidate steps aside (stepAsideIfAsked, steerStep), and
// under WithVersionRule only while no newer version is live, and
// released at once if one is when the lock is won (passes). LockContext
// withdraws the claim it gives up before it returns (or, if the store
// does not confirm it, goes on sending it in the background and before
// the next claim), and the new claim lands behind every claim there is,
// the handover's candidate's included.
func (x *handoff) lockInTurn(ctx context.Context) error {
	e := x.e
	for {
		if err := e.steering.awaitEligible(ctx); err != nil {
			return err
		}
		wctx, cancel := context.WithCancelCause(ctx)
		e.state.Lock()
		x.aside = cancel
		e.state.Unlock()
		err := e.mu.LockContext(wctx)
		e.state.Lock()
		x.aside = nil
		e.state.Unlock()
		cause := context.Cause(wctx)
		cancel(nil)
		switch {
		case err != nil && (cause == errStepAside || cause == errIneligible) && ctx.Err() == nil:
			continue // the wait ended to step aside: claim again (once eligible)
		case err == nil && e.steering.passes(ctx):
			// A newer version is live: begin no term, and give the lease
			// to the next in line at once.
			e.unlockQuietly(ctx)
			continue
		}
		return err
	}
}

// stepAsideIfAsked runs at each heartbeat of a candidate waiting for the
// lock: if a leader shows a handover (in its term, which the lease's
// queue shows it leading) to a candidate whose claim waits behind this
// one's, this candidate steps aside. It costs one read of the members
// per heartbeat while waiting, and a read of the queue while a handover
// shows.
//
// What it reads may be late (a handover whose term has ended since, an
// old queue): it can then only step aside when it need not, which moves
// it back in the queue and never lets anyone hold. A leader that crashed
// after writing its handover makes candidates step aside for its
// candidate while its lease runs out, no more.
func (x *handoff) stepAsideIfAsked(ctx context.Context) {
	e := x.e
	e.state.Lock()
	aside := x.aside
	e.state.Unlock()
	if aside == nil {
		return
	}
	ms, err := e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
	if err != nil {
		return // the next heartbeat asks again
	}
	if !slices.ContainsFunc(ms, func(m Member) bool { return m.handingOver() && m.Handover.To != e.self.ID }) {
		return
	}
	q, err := lease.Queue(ctx, e.client, lease.Key(e.name))
	if err != nil {
		return
	}
	if handoverBehindMe(ms, q, e.self.ID) {
		aside(errStepAside)
	}
}

// handingOver reports whether m's status shows a handover of the term it
// leads (a Handover of an ended term is ignored).
func (m Member) handingOver() bool {
	return m.Leader && m.Handover.To != "" && m.Handover.Term == m.Term
}

// queueHead returns the index of the claim of q that holds and has not
// Expired, or -1: where Transfer and steering take the leader's term to
// be.
func queueHead(q []lease.Claim) int {
	return slices.IndexFunc(q, func(c lease.Claim) bool { return c.Holds && !c.Expired })
}

// behindMe reads queue q: whether leader, holding in h's term, hands over
// to a candidate whose live claim waits behind self's.
func behindMe(q []lease.Claim, leader string, h Handover, self string) bool {
	head := queueHead(q)
	if head < 0 || q[head].Owner != leader || q[head].Token != h.Term {
		return false // the handover's term is not the one that holds
	}
	mine, to := -1, -1
	for j, c := range q[head+1:] {
		switch {
		case c.Expired:
		case c.Owner == self && mine < 0:
			mine = j
		case c.Owner == h.To && to < 0:
			to = j
		}
	}
	return mine >= 0 && to > mine
}
