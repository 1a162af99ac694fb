package leader

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-dsync/dsync/leader/internal/lease"
	"slices"
	"time"
)

// Transfer, the leader's side: how a leader hands its leadership to a
// chosen candidate. It changes only when the leader releases (once the
// candidate's claim is the next live one after its own) and, through the
// Handover in its status, who queues (transfer_aside.go: the candidates
// ahead of the chosen one step aside). The lock's grant rule decides who
// leads, as always; a Transfer cannot make two leaders, only a longer
// wait or another successor than asked.

var (
	// ErrTransferred is the cause of a leadership context cancelled by
	// a transfer. Its leader handed the leadership to another candidate
	// (Transfer).
	ErrTransferred = errors.New("leader: leadership transferred")

	// ErrNotCandidate is returned by Transfer when the candidate named
	// is not a live member. The candidate is not a live member of the
	// election (Members), or stopped being one before it could be
	// handed the leadership.
	ErrNotCandidate = errors.New("leader: not a live candidate")
)

// Handover is what a leader's member status says while it transfers its
// leadership (Transfer). It names to which candidate, and in which of its
// terms. The zero Handover is none. Candidates act on it only while Term is
// the term the lease's queue shows its writer leading.
type Handover struct {
	To   string // the candidate's ID (Member.ID)
	Term uint64 // the leader's term (token) the handover is of
}

// Transfer hands this candidate's leadership to candidate to, a live
// member's ID.
//
// to is a Member.ID (or Election.ID). The candidates queued ahead of it
// step aside: each withdraws its waiting claim at its next heartbeat and
// claims again, which puts it behind to. Once a read of the lease's queue
// shows to's claim as the next live one after this leader's, the
// leadership context is cancelled with cause ErrTransferred. The lease is
// then released as by Resign: at once for Campaign, so stop leader-only
// work first; under Run, once fn has returned. So the
// leaders never overlap, and the gap between them is one handoff, as
// after Resign. Transfer returns nil once the lease is released, or,
// under Run, once the term's context is cancelled (Run releases when fn
// returns, so fn may call Transfer itself, with its context). If to
// withdraws after that read, the candidate behind it leads instead (one
// leader still); Leader tells who leads.
//
// It needs a member store (WithMembers; else ErrNoMembers), since the
// other candidates learn of the handover from this leader's status, and
// to must be a live member (else ErrNotCandidate). Only a candidate of a
// release with Transfer (this one or later) steps aside; one of an older
// release stays ahead, and Transfer waits until ctx ends. A live member
// that does not campaign (a Campaign caller between two campaigns) is
// waited for too. Transfer to this candidate itself returns nil at once.
//
// When ctx ends before to's claim is next, Transfer returns
// context.Cause(ctx) and this candidate keeps leading: the handover is
// withdrawn from its status (at once, else at its next heartbeat), and
// candidates that stepped aside meanwhile stay where they queued. It
// returns ErrNotLeader when this candidate does not lead, or its term
// ends otherwise (lost, resigned) before the handover. Calls wait for
// each other: one Transfer at a time.
func (e *Election) Transfer(ctx context.Context, to string) error {
	e.mustBeMade()
	if e.cfg.members == nil {
		return ErrNoMembers
	}
	return e.xfer.transfer(ctx, to, ErrTransferred, nil, nil)
}

// transfer is Transfer, ending the term with cause; only, if not nil, is
// the term to transfer (ErrNotLeader once another began); ready, if not
// nil, is waited for between the read that shows to next and the
// handover (a preemption's: until its delay has passed), and its error
// returned.
func (x *handoff) transfer(ctx context.Context, to string, cause error, only *term, ready func(context.Context) error) error {
	select {
	case x.turn <- struct{}{}:
		defer func() { <-x.turn }()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	t, err := x.leading(only)
	switch {
	case err != nil:
		return err
	case to == x.e.self.ID:
		return nil
	}
	// When to is next already, nobody need step aside: hand over at once.
	next, err := x.nextAlready(ctx, t, to)
	if err != nil {
		return err
	}
	if next {
		if err := x.whenReady(ctx, ready); err != nil {
			return err
		}
		return x.handOver(ctx, t, cause)
	}
	if !x.setHandover(t, Handover{To: to, Term: t.token}) {
		return ErrNotLeader
	}
	// Tell the candidates now, not at the next heartbeat. A failed write
	// is logged, and the heartbeat sends the status again. The handover
	// is part of this candidate's status, which only it writes: its
	// writes land in the order they were sent (a late one changes
	// nothing: MemberStore's contract), one sent twice says the same, and
	// one that outlives the term names a term that no longer holds, which
	// candidates ignore (behindMe). The worst a stale one does is make a
	// candidate step aside when it need not: it waits longer, and the
	// grant rule is untouched.
	x.putMemberWithin(ctx)
	err = x.awaitNext(ctx, t, to)
	if err == nil {
		err = x.whenReady(ctx, ready)
	}
	if err != nil {
		x.setHandover(t, Handover{})
		x.putMemberWithin(context.WithoutCancel(ctx))
		return err
	}
	return x.handOver(ctx, t, cause)
}

// leading returns this candidate's term, to transfer: ErrNotLeader if it
// does not lead, or if only is not nil and not its term.
func (x *handoff) leading(only *term) (*term, error) {
	e := x.e
	e.state.Lock()
	t := e.term
	e.state.Unlock()
	if t == nil || t.ctx.Err() != nil || only != nil && t != only {
		return nil, ErrNotLeader
	}
	return t, nil
}

// nextAlready reads the lease's queue once, before the handover is
// shown: whether to's claim is next after term t's already. An error ends
// the transfer: ErrNotLeader once t ended, ctx's cause, or
// ErrNotCandidate when to has no claim and is no live member.
func (x *handoff) nextAlready(ctx context.Context, t *term, to string) (bool, error) {
	next, queued, err := x.readNext(ctx, t, to)
	switch {
	case err == nil && nextFound(next):
		return true, nil
	case t.ctx.Err() != nil:
		return false, ErrNotLeader
	case ctx.Err() != nil:
		return false, context.Cause(ctx)
	case err != nil || !queued:
		return false, x.checkLive(ctx, to)
	}
	return false, nil
}

// whenReady waits for ready, if not nil (transfer).
func (x *handoff) whenReady(ctx context.Context, ready func(context.Context) error) error {
	if ready == nil {
		return nil
	}
	return ready(ctx)
}

// cancelThenRelease ends term t with cause for Transfer (handOver), as
// Resign does: the context is cancelled before the lease is released,
// which is what keeps the next leader from starting while leader-only
// work may still run (under Run the term's watch releases once fn has
// returned).
func (x *handoff) cancelThenRelease(ctx context.Context, t *term, cause error) error {
	e := x.e
	mine := t.fnDone == nil && ctx.Err() == nil && t.givingUp.CompareAndSwap(false, true)
	t.cancel(cause)
	if t.fnDone != nil {
		// Run's term: its watch releases once fn has returned, which may
		// be waiting for this call.
		if context.Cause(t.ctx) != cause {
			return ErrNotLeader
		}
		return nil
	}
	if mine {
		// Not within ctx alone: a preemption's ctx ends with the term
		// cancelled above, and a release cut short is only sent again
		// by the Client's resender, later: the next leader would wait
		// for it. unlockQuietly bounds it by the TTL.
		e.release(context.WithoutCancel(ctx), t)
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if context.Cause(t.ctx) != cause {
		return ErrNotLeader // the term had ended otherwise
	}
	return nil
}

// readUntilNext waits until a read of the lease's queue shows to's claim as
// the next live one after term t's: the claim the grant rule makes hold
// when t's is released. Nothing can come between the two later: a new
// claim lands behind every claim there is (a claim's epoch is taken only
// once the epoch below it was seen), and a claim sent late into a slot
// already pruned lies below the queue's floor, where no walk waits for
// it. It reads every poll interval (WithPollInterval), until ctx ends
// (its cause), t ends (ErrNotLeader) or to is no live member
// (ErrNotCandidate; asked only while to has no claim).
func (x *handoff) readUntilNext(ctx context.Context, t *term, to string) error {
	e := x.e
	for {
		next, queued, err := x.readNext(ctx, t, to)
		switch {
		case t.ctx.Err() != nil:
			return ErrNotLeader
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil:
			e.cfg.logger.Warn("leader: transfer: read the queue", "election", e.name, "err", err)
		case next:
			return nil
		case !queued:
			if err := x.checkLive(ctx, to); err != nil {
				return err
			}
		}
		if err := sleepInTerm(ctx, t, e.cfg.pollInterval); err != nil {
			return err
		}
	}
}

// sleepInTerm waits d; ErrNotLeader if term t ends first, ctx's cause if
// ctx does.
func sleepInTerm(ctx context.Context, t *term, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-t.ctx.Done():
		return ErrNotLeader
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// readNext reads the lease's queue: whether to's claim is next after
// term t's (nextAfter), and whether to has a claim.
func (x *handoff) readNext(ctx context.Context, t *term, to string) (next, queued bool, err error) {
	e := x.e
	q, err := lease.Queue(ctx, e.client, lease.Key(e.name))
	if err != nil {
		return false, false, err
	}
	next, queued = nextAfter(q, e.self.ID, t.token, to)
	return next, queued, nil
}

// nextAfter reads queue q: next is whether to's claim is the first live
// claim (not Expired) after the claim of term token, which holds, owned
// by self; queued is whether to has a claim in q. A claim that Expired
// leads no more (the claims behind it hold as if it had ended).
func nextAfter(q []lease.Claim, self string, token uint64, to string) (next, queued bool) {
	queued = slices.ContainsFunc(q, func(c lease.Claim) bool { return c.Owner == to && !c.Expired })
	i := queueHead(q)
	if i < 0 || q[i].Owner != self || q[i].Token != token {
		return false, queued // not this term's: a read from before it, or the term is lost
	}
	for _, c := range q[i+1:] {
		if !c.Expired {
			return c.Owner == to, queued
		}
	}
	return false, queued
}

// checkLive returns nil if to is a live member, ErrNotCandidate if not,
// or why the member store could not tell.
func (x *handoff) checkLive(ctx context.Context, to string) error {
	e := x.e
	ms, err := e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("leader: transfer: read members: %w", err)
	}
	if !slices.ContainsFunc(ms, func(m Member) bool { return m.ID == to }) {
		return fmt.Errorf("%w: %q in %q", ErrNotCandidate, to, e.name)
	}
	return nil
}

// setHandover sets the handover this candidate's status shows while term
// t lasts (h zero: none), and reports whether t still does.
func (x *handoff) setHandover(t *term, h Handover) bool {
	e := x.e
	e.state.Lock()
	defer e.state.Unlock()
	if e.term != t || t.ctx.Err() != nil {
		return false
	}
	x.handover = h
	return true
}

// handoverLocked is the handover to show in this candidate's status: none
// once the term it was of is over. e.state is held.
func (x *handoff) handoverLocked() Handover {
	e := x.e
	h := x.handover
	if h.To == "" || e.term == nil || e.term.ctx.Err() != nil || e.term.token != h.Term {
		return Handover{}
	}
	return h
}

// putMemberWithin writes this candidate's status now, within ctx and a
// heartbeat interval, as a heartbeat does.
func (x *handoff) putMemberWithin(ctx context.Context) {
	e := x.e
	ctx, cancel := context.WithTimeout(ctx, e.cfg.heartbeatInterval)
	defer cancel()
	e.putMember(ctx)
}

// handoff is an Election's part in transfers: the handover it shows
// while it leads, and, while it waits to lead, how to step aside. It
// owns that state; e is the Election it is part of, whose term (under
// e.state), lease, client, member store and status it uses.
type handoff struct {
	e        *Election
	turn     chan struct{} // one Transfer at a time
	handover Handover      // under e.state
	// aside, while campaign waits for the lock (lockInTurn), ends that
	// wait so that the candidate claims again; under e.state.
	aside context.CancelCauseFunc
	// requests records the transfer requests acted on
	// (transfer_request.go); only the heartbeat touches it.
	requests requestsActed
}
