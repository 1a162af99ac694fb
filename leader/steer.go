package leader

import (
	"context"
	"github.com/go-dsync/dsync/leader/internal/lease"
	"slices"
	"sync"
	"time"

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
// hold: who holds is the lease's grant rule's, as always. The candidate's
// step is here; the leader's preemption is in steer_preempt.go, the
// version rule's waits and gate in steer_version.go.

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
	q, err := lease.Queue(ctx, e.client, lease.Key(e.name))
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
	case s.givesWayBehind(ms, q):
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

// handoverBehindMe reports whether a member of ms leads, in the term q
// shows holding, and hands over to a candidate whose claim waits behind
// self's (stepAsideIfAsked's test).
func handoverBehindMe(ms []Member, q []lease.Claim, self string) bool {
	i := slices.IndexFunc(ms, Member.handingOver)
	return i >= 0 && ms[i].Handover.To != self && behindMe(q, ms[i].ID, ms[i].Handover, self)
}

// betterBehind reports whether a live candidate of higher rank than this
// one's waits behind its claim in q, for whom it has not yet stepped
// aside in the term that holds; and if so notes that it now does.
func (s *steerer) betterBehind(ms []Member, q []lease.Claim) bool {
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

func cand(m Member) rank.Cand { return rank.Cand{Version: m.Version, Priority: m.Priority} }

func memberOf(ms []Member, id string) (Member, bool) {
	i := slices.IndexFunc(ms, func(m Member) bool { return m.ID == id })
	if i < 0 {
		return Member{}, false
	}
	return ms[i], true
}
