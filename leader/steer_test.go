package leader_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// A steered is a set of candidates run under Run on one world, their
// terms logged.
type steered struct {
	t   *testing.T
	w   *world
	l   termLog
	ctx context.Context
	wg  sync.WaitGroup
	es  map[string]*leader.Election
}

func newSteered(t *testing.T) (*steered, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &steered{t: t, w: newWorld(), ctx: ctx, es: make(map[string]*leader.Election)}
	return s, func() {
		cancel()
		s.wg.Wait()
		for _, e := range s.es {
			_ = e.Close()
		}
	}
}

// start starts candidate who, and waits until it leads or waits in the
// queue.
func (s *steered) start(who string, opts ...leader.Option) *leader.Election {
	e := newElection(s.t, s.w.process(s.t), opts...)
	s.es[who] = e
	s.wg.Go(func() { s.l.run(s.ctx, e, who) })
	synctest.Wait()
	return e
}

// awaitTerms waits until n terms have begun, at most d; it reports
// whether they had.
func (s *steered) awaitTerms(n int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if terms, _ := s.l.snapshot(); len(terms) >= n {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// priorityScenario: a leads (priority 0), then b (1), c (5) and d (3)
// queue in that order. After two heartbeats a resigns; then the leader
// resigns again. It returns what broke the promise: the leaders after a
// must be c, then d.
func priorityScenario(t *testing.T) []string {
	s, stop := newSteered(t)
	defer stop()
	a := s.start("a", leader.WithPriority(0))
	s.start("b", leader.WithPriority(1))
	c := s.start("c", leader.WithPriority(5))
	s.start("d", leader.WithPriority(3))
	time.Sleep(2 * time.Second) // two heartbeats: the queue sorted
	ctx := context.Background()
	if err := a.Resign(ctx); err != nil {
		return []string{fmt.Sprintf("Resign = %v", err)}
	}
	if !s.awaitTerms(2, time.Minute) {
		return []string{"nobody led after a resigned"}
	}
	if terms, _ := s.l.snapshot(); terms[1].who != "c" {
		return []string{fmt.Sprintf("%s led after a resigned, want c", terms[1].who)}
	}
	if err := c.Resign(ctx); err != nil {
		return []string{fmt.Sprintf("Resign = %v", err)}
	}
	if !s.awaitTerms(3, time.Minute) {
		return []string{"nobody led after c resigned"}
	}
	terms, v := s.l.snapshot()
	for i, want := range []string{"a", "c", "d"} {
		if terms[i].who != want {
			v = append(v, fmt.Sprintf("term %d led by %s, want %s", i, terms[i].who, want))
		}
	}
	return v
}

// TestPriorityAtNextHandover: the queued candidates sort themselves by
// priority, so that at each handover the highest-priority one leads.
func TestPriorityAtNextHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, v := range priorityScenario(t) {
			t.Error(v)
		}
	})
}

// preemptDelay is the preemption delay of preemptScenario's leader.
const preemptDelay = 5 * time.Second

// preemptScenario: a leads with priority 0 and preemption after
// preemptDelay; b (priority 1) and then c (priority 2) queue, c at
// several phases of a's heartbeat. c must lead once the delay has passed
// since it queued, and within the delay plus one handoff (immediate in
// the memory store's fake time): b, ahead of it, steps aside at its
// heartbeat, well within the delay, and a, which saw c at a heartbeat,
// gives way at the delay's end, not at its next heartbeat. a's term
// ends with ErrPreempted, never two at once, and no one else between.
func preemptScenario(t *testing.T) []string {
	var v []string
	for _, phase := range []time.Duration{0, ttl / 9, ttl / 5} {
		for _, x := range preemptAtPhase(t, phase) {
			v = append(v, fmt.Sprintf("c started %v into a heartbeat: %s", phase, x))
		}
	}
	return v
}

func preemptAtPhase(t *testing.T, phase time.Duration) []string {
	s, stop := newSteered(t)
	defer stop()
	s.start("a", leader.WithPriority(0), leader.WithPreemption(preemptDelay))
	s.start("b", leader.WithPriority(1), leader.WithPreemption(preemptDelay))
	time.Sleep(phase)
	begun := time.Now()
	s.start("c", leader.WithPriority(2), leader.WithPreemption(preemptDelay))
	if !s.awaitTerms(2, time.Minute) {
		return []string{"a was not preempted within a minute"}
	}
	terms, v := s.l.snapshot()
	took := terms[1].began.Sub(begun)
	t.Logf("c, started %v into a heartbeat, led %v after it started", phase, took)
	if terms[0].who != "a" || terms[0].cause != leader.ErrPreempted {
		v = append(v, fmt.Sprintf("first term %+v, want a's, ended by ErrPreempted", terms[0]))
	}
	if terms[1].who != "c" {
		v = append(v, fmt.Sprintf("%s led after the preemption, want c", terms[1].who))
	}
	// The awaitTerms poll's step is the slack.
	if took < preemptDelay || took > preemptDelay+10*time.Millisecond {
		v = append(v, fmt.Sprintf("c led %v after it started, want the delay, %v", took, preemptDelay))
	}
	return v
}

// TestPreemption: the better candidate leads after the delay, the
// leader's term ending with ErrPreempted; terms never overlap, and
// tokens rise.
func TestPreemption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, v := range preemptScenario(t) {
			t.Error(v)
		}
	})
}

// TestPreemptionShortDelay: with a delay shorter than a heartbeat
// interval, the better candidate leads once the delay has passed, within
// one heartbeat interval of its start (the leader and the candidate
// ahead of it see it at their heartbeats) and one poll interval of the
// leader's (its Transfer's wait for that candidate to step aside, when
// the leader reads the queue first).
func TestPreemptionShortDelay(t *testing.T) {
	const delay, heartbeat = ttl / 12, ttl / 3
	for _, phase := range []time.Duration{0, heartbeat / 3, 2 * heartbeat / 3} {
		synctest.Test(t, func(t *testing.T) {
			s, stop := newSteered(t)
			defer stop()
			s.start("a", leader.WithPreemption(delay))
			s.start("b", leader.WithPriority(1))
			time.Sleep(phase)
			begun := time.Now()
			s.start("c", leader.WithPriority(2))
			if !s.awaitTerms(2, time.Minute) {
				t.Fatal("a was not preempted within a minute")
			}
			terms, v := s.l.snapshot()
			for _, x := range v {
				t.Error(x)
			}
			took := terms[1].began.Sub(begun)
			t.Logf("c, started %v into a heartbeat, led %v after it started", phase, took)
			if terms[1].who != "c" || terms[0].cause != leader.ErrPreempted {
				t.Errorf("terms %+v, want a's preempted, then c's", terms[:2])
			}
			if bound := heartbeat + leader.DefaultPollInterval + 10*time.Millisecond; took < delay || took > bound {
				t.Errorf("c led %v after it started, want within [%v, %v]", took, delay, bound)
			}
		})
	}
}

// TestPriorityWithoutPreemptionKeepsLeader: a better candidate does not
// displace a leader that did not ask for preemption.
func TestPriorityWithoutPreemptionKeepsLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, stop := newSteered(t)
		defer stop()
		s.start("a", leader.WithPriority(0))
		s.start("b", leader.WithPriority(9))
		time.Sleep(30 * time.Second)
		terms, v := s.l.snapshot()
		for _, x := range v {
			t.Error(x)
		}
		if len(terms) != 1 || terms[0].who != "a" {
			t.Errorf("terms %+v, want a's alone", terms)
		}
	})
}

// TestSteeringNeedsMembers: the steering options are refused without a
// member store.
func TestSteeringNeedsMembers(t *testing.T) {
	c := newProc(t).c
	for _, opt := range []leader.Option{leader.WithPriority(1), leader.WithPreemption(0), leader.WithVersionRule(nil)} {
		if _, err := leader.NewElection(c, "cron", opt); err == nil {
			t.Error("NewElection with a steering option and no member store: nil error")
		}
	}
	if _, err := leader.NewElection(c, "cron", leader.WithPreemption(-time.Second)); err == nil {
		t.Error("NewElection with a negative preemption delay: nil error")
	}
}

// TestPreemptionOfCampaign: a leader that campaigned (not under Run)
// sees its context cancelled with ErrPreempted, and the better
// candidate leads only once it did.
func TestPreemptionOfCampaign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		ctx := context.Background()
		a := newElection(t, w.process(t), leader.WithPreemption(time.Second))
		b := newElection(t, w.process(t), leader.WithPriority(1))
		defer a.Close()
		defer b.Close()
		actx, err := a.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bctx, err := b.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if actx.Err() == nil {
			t.Fatal("b leads while a's context lives")
		}
		synctest.Wait()
		if cause := context.Cause(actx); cause != leader.ErrPreempted {
			t.Fatalf("a's context ended by %v, want ErrPreempted", cause)
		}
		if bctx.Err() != nil || !b.IsLeader() || a.IsLeader() {
			t.Fatal("b does not lead alone after the preemption")
		}
	})
}

// TestPriorityAfterLostLease: when the leader's lease runs out (its
// renewals fail), the highest-priority candidate queued leads next.
func TestPriorityAfterLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, stop := newSteered(t)
		defer stop()
		a := s.w.cut(t)
		e := newElection(t, a.proc, leader.WithPriority(0))
		s.es["a"] = e
		s.wg.Go(func() { s.l.run(s.ctx, e, "a") })
		synctest.Wait()
		s.start("b", leader.WithPriority(1))
		s.start("c", leader.WithPriority(5))
		time.Sleep(2 * time.Second) // two heartbeats: the queue sorted
		a.renewDown.Store(true)
		if !s.awaitTerms(2, time.Minute) {
			t.Fatal("nobody led after a's lease ran out")
		}
		terms, v := s.l.snapshot()
		for _, x := range v {
			t.Error(x)
		}
		if !errors.Is(terms[0].cause, leader.ErrLeadershipLost) || terms[1].who != "c" {
			t.Errorf("terms %+v, want a's lost, then c's", terms[:2])
		}
	})
}

// TestPreemptionRetargets: a leader whose preemption to a candidate is
// under way (it waits for a candidate ahead, z, to step aside) sees a
// better one queue: it stops that preemption, and preempts to the better
// one at its own delay's end, so the leadership moves once, to the best,
// not through the worse one first.
func TestPreemptionRetargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay = 2 * time.Second
		s, stop := newSteered(t)
		defer stop()
		s.start("a", leader.WithPreemption(delay))
		// z waits ahead, blind to handovers (its member reads fail) until
		// the better candidate has been seen.
		_, reads := s.startUnread("z")
		reads.down.Store(true)
		s.start("b", leader.WithPriority(1), leader.WithPreemption(delay))
		time.Sleep(delay + delay/4) // a's preemption to b is under way
		s.start("c", leader.WithPriority(2), leader.WithPreemption(delay))
		time.Sleep(3 * delay / 4)
		reads.down.Store(false)
		if !s.awaitTerms(2, time.Minute) {
			t.Fatal("a was not preempted within a minute")
		}
		terms, v := s.l.snapshot()
		for _, x := range v {
			t.Error(x)
		}
		if terms[1].who != "c" || terms[0].cause != leader.ErrPreempted {
			t.Errorf("terms %+v: want a's preempted, then c's", terms[:2])
		}
	})
}
