package queue_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/integration/history"
)

// The owner's side of the outage rule in the simulation (resume.go), on
// outage seeds only (TestSimulationOutage): every other seed retires a
// lease at its deadline as before. At its deadline an owner suspends its
// session instead (queue.Lease.Suspend): its holds are lost there (the
// loss is recorded), their claims stay unended, its workers claim nothing
// and a worker whose hold ran its course waits for the verdict (as a
// program that locks again when Lost closes). The keeper then probes the
// store with a read every quarter interval, and only after one replied
// renews the session (keeping the claims' keys covered) and runs the
// resume check on the renewal: resumed, the holds go on with the same
// claims and tokens, their deadlines recorded anew, so that each hold's
// validity in the history spans its suspension; dead, the session is
// retired and its claims marked dead; otherwise it tries again, and gives
// up at its deadline plus the grace plus a TTL (retire, mark dead).
//
// Checkers: integration/history's, on holds whose validity a resume
// extends across the suspension (so nobody may hold a conflicting claim
// of the key between the deadline and the resume, nor after it while the
// resumed hold is valid; tokens of new holds never go back); and, at
// each resume, the store's own documents: every claim resumed is there
// with its nonce and without an end marker. The credit checker leaves
// out the markers an owner inserts for its own claims (MarkDead): its
// check may find dead, on its smaller Ê, a session no waiter could yet.

// expire ends ss at its deadline: on an outage seed by suspending it,
// on every other seed by retiring it, as before.
func (o *owner) expire(ss *simSession) {
	if o.s.outage == nil {
		if ss.lease.Expire(o.mono()) {
			o.retire(ss)
		}
		return
	}
	if ss.lease.Suspend(o.mono()) {
		o.suspend(ss)
	}
}

// suspend records the loss of ss's holds and makes its suspension with
// their claims (ordered, so that a seed replays); an engine that refuses
// (it knows the counted renewal no more) retires ss.
func (o *owner) suspend(ss *simSession) {
	s := o.s
	s.stats.ownerSuspends++
	var refs []queue.Ref
	for c, hs := range o.holds {
		if hs == ss {
			refs = append(refs, c.Ref)
			o.record(history.Event{Ev: history.EvLost, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(o.deadline(ss)), Src: history.SrcLib})
		}
	}
	slices.SortFunc(refs, func(a, b queue.Ref) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Epoch, b.Epoch)) })
	sus, err := o.eng.Suspend(ss.id, ss.lease, refs)
	s.tracef("SUSPEND %s session %s, %d holds: %v", o.name, ss.id, len(refs), err)
	if err != nil {
		o.retire(ss)
		return
	}
	ss.sus, ss.giveUp = sus, ss.lease.Deadline()+s.outage.grace+simTTL
	if s.now < simLength {
		// (Past it, keepers stop: no check would follow.)
		s.stats.holdsSuspended += len(refs)
	}
}

// suspendedStep is one step of the keeper of a suspended session: a probe
// read, then a renewal and the resume check.
func (o *owner) suspendedStep(a *actor, ss *simSession) {
	s, ctx := o.s, a.ctx()
	o.sleepUntil(a, o.trueAt(ss.lease.Due()))
	if !ss.lease.Suspended() {
		return
	}
	if o.mono() >= ss.giveUp {
		s.stats.resumeGiveUps++
		s.stats.holdsGivenUp += len(ss.sus.Claims())
		o.endSuspension(ctx, ss)
		return
	}
	if _, _, err := (net{s}).GetSession(ctx, ss.id); err != nil {
		ss.lease.Fail(o.mono())
		return
	}
	var keys []string
	for _, c := range ss.sus.Claims() {
		keys = append(keys, c.Key)
	}
	_, _ = o.eng.Refresh(ctx, keys)
	o.capLease(ss)
	ss.renewals = append(ss.renewals, s.now)
	found, sent, err := o.eng.RenewSession(ctx, ss.id, simTTL)
	switch {
	case err != nil:
		ss.lease.Fail(o.mono())
	case !found:
		o.endSuspension(ctx, ss)
	default:
		if ev := ss.lease.Confirm(sent, o.mono()); ev != queue.LeaseSuspended {
			panic(fmt.Sprintf("a suspended lease's Confirm = %v", ev))
		}
		o.resumeCheck(ctx, ss, sent)
	}
	_, _ = o.eng.Flush(ctx)
}

// resumeCheck runs ss's resume check on its renewal sent at sent, and
// applies the verdict.
func (o *owner) resumeCheck(ctx context.Context, ss *simSession, sent time.Duration) {
	s := o.s
	v, why := ss.sus.Check(ctx, ss.lease, sent)
	s.tracef("RESUME CHECK %s session %s: %v (%v)", o.name, ss.id, v, why)
	switch v {
	case queue.ResumeResumed:
		s.stats.resumes++
		s.stats.holdsResumed += len(ss.sus.Claims())
		o.checkResumed(ss)
		// The rule, independently of the lease: a deadline counted from
		// the renewal's send, within the coverage the renewal was sent
		// with.
		ss.pred = sent + simTTL - simMargin
		if ss.capSent > 0 {
			ss.pred = min(ss.pred, ss.capSent)
		}
		ss.sus = nil
		o.armDeadline(ss)
		for c, hs := range o.holds {
			if hs == ss {
				o.record(history.Event{Ev: history.EvDeadline, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(o.deadline(ss)), Src: history.SrcLib})
				o.record(history.Event{Ev: history.EvDeadline, Key: c.Key, Token: c.Epoch, T: int64(s.now), DL: int64(o.trueAt(ss.pred)), Src: history.SrcPred})
			}
		}
	case queue.ResumeDead:
		s.stats.resumeDead++
		s.stats.holdsFoundDead += len(ss.sus.Claims())
		o.endSuspension(ctx, ss)
	default:
		ss.lease.Fail(o.mono())
	}
}

// endSuspension retires ss and marks its suspended claims dead.
func (o *owner) endSuspension(ctx context.Context, ss *simSession) {
	o.retire(ss)
	for _, c := range ss.sus.Claims() {
		o.s.outage.ownMarks[queue.EndID(c.Key, c.Epoch, c.Nonce)] = true
	}
	_ = ss.sus.MarkDead(ctx, ss.lease)
	ss.sus = nil
}

// checkResumed checks, on the store's own documents, that every claim of
// ss's suspension is there with its nonce and without an end marker as
// its hold resumes.
func (o *owner) checkResumed(ss *simSession) {
	st, bg := o.s.server.store, context.Background()
	for _, c := range ss.sus.Claims() {
		d, found, _ := st.Get(bg, queue.ClaimID(c.Key, c.Epoch))
		m, ended, _ := st.Get(bg, queue.EndID(c.Key, c.Epoch, c.Nonce))
		switch {
		case !found || d.Nonce != c.Nonce:
			o.s.outage.resumed = append(o.s.outage.resumed, fmt.Sprintf("%s resumed %s#%d (nonce %s) at %v, not in the store (%v, nonce %s)",
				o.name, c.Key, c.Epoch, c.Nonce, o.s.now, found, d.Nonce))
		case ended:
			o.s.outage.resumed = append(o.s.outage.resumed, fmt.Sprintf("%s resumed %s#%d at %v, ended by a %s marker",
				o.name, c.Key, c.Epoch, o.s.now, m.Kind))
		}
	}
}

// awaitVerdict parks a worker whose hold in ss ran its course while ss is
// suspended, until the verdict.
func (o *owner) awaitVerdict(a *actor, ss *simSession) {
	for ss.lease.Suspended() {
		a.sleep(simPoll / 10)
	}
}
