package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// ownStopScene is the opening that the tests of claims left live below a
// weighted release share (dropfloor_keeps, recheck_floor, ownstop_prune).
// Three processes Q, R and P, each an engine with a session of its own,
// on one memory store and one step clock, claim units of key k with
// limit 3: Q's first claim holds and ends, Q's r (1) holds, R's y (1) is
// claimed but not walked (a slow process), and P's d (1) holds and is
// released, which leaves y and r live below it. The tests go on from
// there, each its own way.
type ownStopScene struct {
	t          *testing.T
	clock      *stepClock
	mem        *memory.Store
	eQ, eR, eP *queue.Engine
	sQ, sR, sP string
	r, y, d    *queue.Claim
}

func newOwnStopScene(t *testing.T) *ownStopScene {
	t.Helper()
	s := &ownStopScene{
		t:     t,
		clock: &stepClock{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		mem:   memory.New(),
	}
	s.eQ, s.sQ = s.engine()
	s.eR, s.sR = s.engine()
	s.eP, s.sP = s.engine()
	first := s.claim(s.eQ, s.sQ, 1)
	if !s.walk(s.eQ, first) {
		t.Fatal("the first claim does not hold")
	}
	s.end(s.eQ, first)
	s.r = s.claim(s.eQ, s.sQ, 1) // Q's unit
	if !s.walk(s.eQ, s.r) {
		t.Fatal("r does not hold")
	}
	s.y = s.claim(s.eR, s.sR, 1) // R's claim, its walk delayed (a slow process)
	s.d = s.claim(s.eP, s.sP, 1)
	if !s.walk(s.eP, s.d) {
		t.Fatal("d does not hold: 1+1+1 fit 3")
	}
	s.end(s.eP, s.d) // P's tip: d, which left y and r live below it
	return s
}

// engine is a process of its own on the scene's store and clock, with a
// session of a minute.
func (s *ownStopScene) engine() (*queue.Engine, string) {
	s.t.Helper()
	ctx := context.Background()
	e, err := queue.New(s.mem, s.clock, queue.DefaultConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	sess, _, err := e.OpenSession(ctx, time.Minute)
	if err != nil {
		s.t.Fatal(err)
	}
	return e, sess
}

// claim claims w units of k (limit 3) in e for session sess.
func (s *ownStopScene) claim(e *queue.Engine, sess string, w int64) *queue.Claim {
	s.t.Helper()
	c, err := e.Claim(context.Background(), "k", "o", sess, weighted(w), false)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// walk reports whether c holds.
func (s *ownStopScene) walk(e *queue.Engine, c *queue.Claim) bool {
	s.t.Helper()
	h, _, err := e.Walk(context.Background(), c)
	if err != nil {
		s.t.Fatal(err)
	}
	return h
}

// end ends c, which held: a release.
func (s *ownStopScene) end(e *queue.Engine, c *queue.Claim) {
	s.t.Helper()
	if err := e.End(context.Background(), c, true); err != nil {
		s.t.Fatal(err)
	}
}

// renew renews the sessions of Q, R and P, for a minute.
func (s *ownStopScene) renew() {
	s.t.Helper()
	for _, x := range []struct {
		e    *queue.Engine
		sess string
	}{{s.eQ, s.sQ}, {s.eR, s.sR}, {s.eP, s.sP}} {
		if _, _, err := x.e.RenewSession(context.Background(), x.sess, time.Minute); err != nil {
			s.t.Fatal(err)
		}
	}
}

// waitWhole goes on from the opening as two of the tests do: P's c claims
// the whole semaphore (3) and does not hold beside y and r, then r ends,
// one unit of the two that c lacks. It returns c, waiting.
func (s *ownStopScene) waitWhole() *queue.Claim {
	s.t.Helper()
	c := s.claim(s.eP, s.sP, 3) // P's other goroutine: the whole semaphore
	if s.walk(s.eP, c) {
		s.t.Fatal("c holds beside y and r")
	}
	s.end(s.eQ, s.r)
	return c
}
