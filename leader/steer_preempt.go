package leader

import (
	"context"
	"errors"
	"github.com/go-dsync/dsync/leader/internal/lease"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// Preemption, the leader's side of steering (WithPreemption,
// WithVersionRule): the leader transfers to the best candidate queued
// behind it that it gives way to, once the preemption delay has passed
// since that one queued, by the store's clock.

// steerLeader is the leader's step: once the preemption delay has passed
// since the best candidate queued behind this leader that it gives way to
// (the highest rank, then the earliest in the queue) claimed, by the
// store's clock (its claim's QueuedAt), transfer to it. Until then the
// heartbeat is set to preempt when the delay ends (arm), so a candidate
// seen before its delay is over is preempted to at its end, not at the
// heartbeat after it.
func (s *steerer) steerLeader(t *term, ms []Member, q []lease.Claim) {
	to, queuedAt := s.bestBetter(t, ms, q)
	if !givesWayTo(to) {
		s.disarm()
		return
	}
	if wait := s.waitFor(queuedAt); wait > 0 {
		s.retarget(to)
		s.armAtDelayEnd(wait, t, to, queuedAt)
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
func (s *steerer) bestBetter(t *term, ms []Member, q []lease.Claim) (to string, queuedAt time.Time) {
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
