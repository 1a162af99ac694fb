package leader

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader/internal/rank"
)

// Steering (steer_options.go), at each heartbeat of a candidate that set
// a steering option: one read of the members, one of the lease's queue
// when a member might make it move (mayMove), then at most one move. A
// waiting candidate steps aside (as for a Transfer, transfer_aside.go)
// when a better live candidate waits behind it, or withdraws while a
// newer version is live; a leader transfers to the best better
// candidate once its preemption delay has passed since that one queued,
// steering once more at the delay's end when a heartbeat saw it sooner
// (the same reads). What it reads may be stale: it can only make a candidate wait
// longer, or a leader give way when it need not, and never lets anyone
// hold: who holds is the lease's grant rule's, as always.

// errIneligible ends a candidate's wait for the lock because a newer
// version is live (WithVersionRule): it waits until none is, then claims
// again (lockInTurn); callers never see it.
var errIneligible = errors.New("leader: a newer version is live")

// steerer is an Election's steering: what it remembers between
// heartbeats, which only the heartbeat's goroutine touches, but the
// preemption under way (under mu). e is the Election it steers, whose
// options, term (under e.state), members, lease and transfers (e.xfer)
// it uses.
type steerer struct {
	e *Election
	// head is the term (token) that held when stepped was last reset:
	// a candidate steps aside at most once per head term and better
	// candidate, so that a stale read cannot make it step aside in a loop.
	head    uint64
	stepped map[string]bool
	// due, while a better candidate's delay runs (steerLeader), fires a
	// read of the queue ahead of its end (readTook, the last read's
	// time): the heartbeat then preempts to dueTo in term dueTerm at once
	// (dueC, preemptDue), not at its next beat, and the transfer hands
	// over at the delay's end if that read shows dueTo next. Only the
	// heartbeat's goroutine touches them.
	due      *time.Timer
	dueTo    string
	dueTerm  *term
	dueSince time.Time // dueTo's claim's QueuedAt
	readTook time.Duration

	mu sync.Mutex
	// preemptTo is the candidate the preemption under way transfers to,
	// stopPreempt ends it, and preemptGen counts preemptions begun, so
	// that one that ends clears only its own; stopPreempt is nil when
	// none is under way.
	preemptTo   string
	stopPreempt context.CancelFunc
	preemptGen  uint64
}

// steerStep is the heartbeat's steering step.
func (s *steerer) steerStep(ctx context.Context) {
	e := s.e
	e.state.Lock()
	aside := e.xfer.aside
	t := e.term
	leading := t != nil && t.ctx.Err() == nil
	e.state.Unlock()
	if aside == nil && !leading {
		s.disarm()
		return
	}
	ms, err := e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
	if err != nil {
		return // the next heartbeat reads again
	}
	if !leading {
		s.disarm()
		if !s.eligible(ms) {
			aside(errIneligible)
			return
		}
	}
	// The queue tells where the others wait; it is read only when a
	// member might make this candidate move.
	if !s.mayMove(ms, leading) {
		s.disarm()
		return
	}
	began := time.Now()
	q, err := e.client.Queue(ctx, LockKey(e.name))
	if err != nil {
		return
	}
	// A preemption reads the queue this long ahead of its delay's end
	// (arm), bounded, so that a slow read cannot make it hand over early.
	s.readTook = min(time.Since(began), e.cfg.heartbeatInterval/4)
	switch {
	case leading:
		s.steerLeader(t, ms, q)
	case handoverBehindMe(ms, q, e.self.ID):
		aside(errStepAside)
	case !plantedPriorityIgnored() && s.betterBehind(ms, q):
		aside(errStepAside)
	}
}

// mayMove reports whether members ms may make this candidate move: while
// it waits, a leader shows a handover, or another member that does not
// lead ranks above it; while it leads, a member it gives way to is live
// (betterFor).
func (s *steerer) mayMove(ms []Member, leading bool) bool {
	e := s.e
	return slices.ContainsFunc(ms, func(m Member) bool {
		switch {
		case m.ID == e.self.ID:
			return false
		case leading:
			return s.betterFor(m)
		case m.Leader:
			return m.handingOver()
		}
		return e.cfg.steer.rule().Compare(cand(m), cand(e.self)) > 0
	})
}

// betterFor reports whether this candidate, leading, gives way to m: one
// of a newer version (WithVersionRule), or of a higher rank
// (WithPreemption).
func (s *steerer) betterFor(m Member) bool {
	e := s.e
	r, me := e.cfg.steer.rule(), cand(e.self)
	if !e.cfg.steer.preemptSet && !r.Newer(m.Version, me.Version) {
		return false
	}
	return r.Compare(cand(m), me) > 0
}

// eligible reports whether this candidate may lead given members ms: no
// live member has a newer version (always, without WithVersionRule).
func (s *steerer) eligible(ms []Member) bool {
	e := s.e
	r := e.cfg.steer.rule()
	return !slices.ContainsFunc(ms, func(m Member) bool { return m.ID != e.self.ID && r.Newer(m.Version, e.self.Version) })
}

// handoverBehindMe reports whether a member of ms leads, in the term q
// shows holding, and hands over to a candidate whose claim waits behind
// self's (stepAsideIfAsked's test).
func handoverBehindMe(ms []Member, q []dsync.ClaimInfo, self string) bool {
	i := slices.IndexFunc(ms, Member.handingOver)
	return i >= 0 && ms[i].Handover.To != self && behindMe(q, ms[i].ID, ms[i].Handover, self)
}

// betterBehind reports whether a live candidate of higher rank than this
// one's waits behind its claim in q, for whom it has not yet stepped
// aside in the term that holds; and if so notes that it now does.
func (s *steerer) betterBehind(ms []Member, q []dsync.ClaimInfo) bool {
	e := s.e
	head := queueHead(q)
	if head < 0 {
		return false
	}
	if q[head].Token != s.head {
		s.head, s.stepped = q[head].Token, nil
	}
	r, me := e.cfg.steer.rule(), cand(e.self)
	mine := false
	for _, c := range q[head+1:] {
		switch {
		case c.Expired:
		case c.Owner == e.self.ID:
			mine = true
		case mine:
			m, ok := memberOf(ms, c.Owner)
			if ok && r.Compare(cand(m), me) > 0 && !s.stepped[c.Owner] {
				if s.stepped == nil {
					s.stepped = make(map[string]bool)
				}
				s.stepped[c.Owner] = true
				return true
			}
		}
	}
	return false
}

// steerLeader is the leader's step: once the preemption delay has passed
// since the best candidate queued behind this leader that it gives way to
// (the highest rank, then the earliest in the queue) claimed, by the
// store's clock (its claim's QueuedAt), transfer to it. Until then the
// heartbeat is set to preempt when the delay ends (arm), so a candidate
// seen before its delay is over is preempted to at its end, not at the
// heartbeat after it.
func (s *steerer) steerLeader(t *term, ms []Member, q []dsync.ClaimInfo) {
	to, queuedAt := s.bestBetter(t, ms, q)
	if to == "" || plantedPriorityIgnored() {
		s.disarm()
		return
	}
	if wait := s.waitFor(queuedAt); wait > 0 {
		s.retarget(to)
		if !plantedPreemptAtBeat() {
			s.arm(wait, t, to, queuedAt)
		}
		return
	}
	s.disarm()
	s.startPreempt(t, to, queuedAt)
}

// waitFor is how long the preemption delay of a claim queued at since
// still runs, by the store's clock.
func (s *steerer) waitFor(since time.Time) time.Duration {
	return s.e.cfg.steer.preempt - s.storeTime().Sub(since)
}

// untilDue waits until the preemption delay of a claim queued at since
// has passed, by the store's clock; ErrNotLeader if term t ends first,
// ctx's cause if ctx does.
func (s *steerer) untilDue(ctx context.Context, t *term, since time.Time) error {
	for {
		wait := s.waitFor(since)
		if wait <= 0 {
			return nil
		}
		if err := sleepInTerm(ctx, t, wait); err != nil {
			return err
		}
	}
}

// startPreempt starts preempting term t to candidate to, whose claim was
// queued at since, unless a preemption to it is under way: its transfer
// hands over no sooner than the delay's end. One under way to another candidate (a
// worse one: the heartbeat preempts to the best it sees) is stopped
// first, so that the leadership moves once, to the best, and not through
// the worse one first: the new transfer waits for the old one's turn.
func (s *steerer) startPreempt(t *term, to string, since time.Time) {
	e := s.e
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopPreempt != nil {
		if s.preemptTo == to {
			return
		}
		s.stopPreempt()
	}
	// Within three heartbeats (the next heartbeat tries again if it is
	// still due); ended with the term, or by Close.
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.memberMaxAge())
	s.preemptGen++
	s.preemptTo, s.stopPreempt = to, cancel
	e.wg.Add(1)
	go s.preempt(ctx, cancel, s.preemptGen, t, to, since)
}

// retarget stops a preemption under way to another candidate than to,
// the best one now, whose delay has not yet passed.
func (s *steerer) retarget(to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopPreempt != nil && s.preemptTo != to {
		s.stopPreempt()
		// Stopped: a preemption to the one it went to starts anew
		// (startPreempt), not taken for this one, still under way.
		s.preemptTo = ""
	}
}

// preemptDue is the heartbeat's step when the delay set by arm is about
// to end, a read of the queue ahead of it: preempt to the candidate a
// heartbeat saw then, without reading the members first. The transfer
// reads the queue and, if it shows the candidate's claim next, hands
// over at the delay's end (untilDue), so that the read's time (on some
// stores longer than the handover) does not add to the delay; else it
// hands over only once a later read shows it next (or gives up when it
// is no live member). A better candidate that queued since is
// preempted to in turn, its own delay after it queued.
func (s *steerer) preemptDue() {
	t, to, since := s.dueTerm, s.dueTo, s.dueSince
	if t == nil || t.ctx.Err() != nil {
		s.disarm()
		return
	}
	// Timed by this process's clock, which may run ahead of the store's
	// estimate (drift, a new sample): the delay is judged by the store's.
	if wait := s.waitFor(since); wait > s.readTook {
		s.arm(wait, t, to, since)
		return
	}
	s.disarm()
	s.startPreempt(t, to, since)
}

// storeTime is the earliest the store's time can be now, as this
// Election's Client knows it: a delay timed from a QueuedAt by it is
// never cut short by this process's clock, only lengthened by the
// uncertainty of its reading of the store's.
func (s *steerer) storeTime() time.Time {
	return clienthook.StoreTime.(func(*dsync.Client) time.Time)(s.e.client)
}

// arm sets the heartbeat to preempt term t to candidate to, whose claim
// was queued at since, when the delay's end is d away, a read of the
// queue ahead of it.
func (s *steerer) arm(d time.Duration, t *term, to string, since time.Time) {
	s.dueTerm, s.dueTo, s.dueSince = t, to, since
	d = max(d-s.readTook, 0)
	if s.due == nil {
		s.due = time.NewTimer(d)
		return
	}
	s.due.Reset(d)
}

// disarm cancels a preemption set by arm.
func (s *steerer) disarm() {
	s.dueTerm, s.dueTo, s.dueSince = nil, "", time.Time{}
	if s.due != nil {
		s.due.Stop()
	}
}

// dueC is the channel on which a preemption set by arm fires (nil: none
// is).
func (s *steerer) dueC() <-chan time.Time {
	if s.due == nil {
		return nil
	}
	return s.due.C
}

// bestBetter returns the best candidate queued behind term t's claim in
// q that this leader gives way to: one of a newer version (WithVersionRule),
// or of a higher rank (WithPreemption); "" if none. queuedAt is its
// claim's QueuedAt.
func (s *steerer) bestBetter(t *term, ms []Member, q []dsync.ClaimInfo) (to string, queuedAt time.Time) {
	e := s.e
	head := queueHead(q)
	if head < 0 || q[head].Owner != e.self.ID || q[head].Token != t.token {
		return "", time.Time{} // a read from before this term, or the term is lost
	}
	r := e.cfg.steer.rule()
	var best Member
	for _, c := range q[head+1:] {
		m, ok := memberOf(ms, c.Owner)
		switch {
		case c.Expired || !ok || !s.betterFor(m):
		case best.ID == "" || r.Compare(cand(m), cand(best)) > 0:
			best, queuedAt = m, c.QueuedAt
		}
	}
	return best.ID, queuedAt
}

// preempt transfers term t to candidate to, with cause ErrPreempted,
// until ctx ends (cancel), t ends, or Close; gen is its preemptGen.
func (s *steerer) preempt(ctx context.Context, cancel context.CancelFunc, gen uint64, t *term, to string, since time.Time) {
	e := s.e
	defer e.wg.Done()
	defer func() {
		s.mu.Lock()
		if s.preemptGen == gen {
			s.preemptTo, s.stopPreempt = "", nil
		}
		s.mu.Unlock()
	}()
	defer cancel()
	stop := context.AfterFunc(t.ctx, cancel)
	defer stop()
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := e.xfer.transfer(ctx, to, ErrPreempted, t, func(ctx context.Context) error { return s.untilDue(ctx, t, since) }); err != nil && !errors.Is(err, ErrNotLeader) && ctx.Err() == nil {
		e.cfg.logger.Warn("leader: preempt", "election", e.name, "to", to, "err", err)
	}
}

// awaitEligible waits, under WithVersionRule, until no live member has a
// newer version than this candidate's, reading the members once per
// heartbeat interval; at once without the rule.
func (s *steerer) awaitEligible(ctx context.Context) error {
	e := s.e
	if !e.cfg.steer.versionRule {
		return nil
	}
	for {
		ms, err := e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err == nil && s.eligible(ms):
			return nil
		case err != nil:
			e.cfg.logger.Warn("leader: read members", "election", e.name, "err", err)
		}
		timer := time.NewTimer(e.cfg.heartbeatInterval)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return context.Cause(ctx)
		}
	}
}

// passes is the pre-term gate of WithVersionRule: a candidate whose claim
// has come to hold reads the members fresh, and passes (releases, and
// begins no term) if a newer member is live, or if the store does not
// answer. A newer candidate whose status that read shows so never sees an
// older term begin after it.
func (s *steerer) passes(ctx context.Context) bool {
	e := s.e
	if !e.cfg.steer.versionRule || plantedGateSkipped() {
		return false
	}
	ms, err := s.confirmedMembers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.cfg.logger.Warn("leader: read members before the term", "election", e.name, "err", err)
		}
		return true
	}
	return !s.eligible(ms)
}

// confirmedMembers lists the live members, from writes the store has
// confirmed when it can tell (ConfirmedMembers).
func (s *steerer) confirmedMembers(ctx context.Context) ([]Member, error) {
	e := s.e
	if c, ok := e.cfg.members.(ConfirmedMembers); ok {
		return c.ConfirmedMembers(ctx, e.name, e.cfg.memberMaxAge())
	}
	return e.cfg.members.Members(ctx, e.name, e.cfg.memberMaxAge())
}

// A ConfirmedMembers is a MemberStore that can list the live members as
// of the writes its deployment has confirmed durably (leadermongo's: a
// read at read concern majority). WithVersionRule's pre-term gate reads
// through it when the store has it.
type ConfirmedMembers interface {
	ConfirmedMembers(ctx context.Context, election string, maxAge time.Duration) ([]Member, error)
}

func cand(m Member) rank.Cand { return rank.Cand{Version: m.Version, Priority: m.Priority} }

func memberOf(ms []Member, id string) (Member, bool) {
	i := slices.IndexFunc(ms, func(m Member) bool { return m.ID == id })
	if i < 0 {
		return Member{}, false
	}
	return ms[i], true
}
