package queue_test

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The stalled link (simnet_test.go): on half the seeds, now and then a start
// of a key's queue (an ordered insert of its gates and first claim) or a
// refresh's gate is held back until just after the store is next emptied.
// Its sender gives up on it; an emptying follows 1.3 to 2 s later, as an
// operator's once nothing is held (reset waits for that); and the request
// lands just after it, or 2.5 s after it was sent if no emptying came.
// Meanwhile the workers claim for 0.6 s, and then nothing until the
// emptying (an operator's quiet time), so that it can come.
// Its gates then name a segment of the history before the emptying, in
// buckets that may still give coverage: the tokens of a hold in that
// segment would lie below those handed out before the emptying (issue
// 42), which the token order across emptyings catches.

const (
	simMaxStalled = 4                       // requests held back per run
	simStallEmpty = 1300 * time.Millisecond // the emptying follows after this,
	simStallSpan  = 700 * time.Millisecond  // plus up to this
	simStallMax   = 2500 * time.Millisecond // a request held lands after this at the latest
	simStallBusy  = 600 * time.Millisecond  // workers claim for this long after a request is held
	simStallLand  = 25 * time.Millisecond   // and again this long after the emptying
)

// stalledReq is a request held back: apply lands it, once, and then the
// requests sent after it on the same stalled link (then).
type stalledReq struct {
	apply func()
	then  []func()
	done  bool
}

// stallNext reports whether to hold back the request about to be sent.
func (s *sim) stallNext() bool {
	return s.lrng != nil && s.stats.stalled < simMaxStalled && s.lrng.Float64() < 0.1
}

// callStalled sends a request that is held back: the caller times out, an
// emptying is scheduled, and apply lands just after it (releaseStalled).
// follow names the withdrawal of a start's claim: it is sent after the
// start gave up, on the same stalled link, and lands right after it.
func (n net) callStalled(ctx context.Context, follow string, apply func()) error {
	s, a := n.s, ctx.Value(actorKey{}).(*actor)
	sv := s.server
	s.stats.stalled++
	sv.inflight++
	h := &stalledReq{}
	h.apply = func() {
		if h.done {
			return
		}
		h.done = true
		sv.inflight--
		s.stats.late++
		apply()
		for _, f := range h.then {
			f()
		}
		delete(sv.stalledAfter, follow)
	}
	if follow != "" {
		sv.stalledAfter[follow] = h
	}
	sv.stalled = append(sv.stalled, h)
	// The workers go on for a while, and then claim nothing more until
	// the emptying (an operator's quiet hour).
	if s.now >= s.quietUntil {
		s.quietFrom, s.quietUntil = s.now+simStallBusy, s.now+simStallMax
	}
	s.at(s.now+simStallEmpty+time.Duration(s.lrng.Int64N(int64(simStallSpan))), func() { s.reset("empty", 0) })
	s.at(s.now+simStallMax, h.apply)
	s.tracef("  held back for %s", a.o.name)
	s.at(s.now+simTimeout, func() { s.step(a) })
	a.block()
	return errSimTimeout
}

// callAfterStalled sends a request that follows a request held back: the
// caller times out, and apply lands right after the held one.
func (n net) callAfterStalled(ctx context.Context, h *stalledReq, apply func()) error {
	s, a := n.s, ctx.Value(actorKey{}).(*actor)
	s.server.inflight++
	h.then = append(h.then, func() {
		s.server.inflight--
		apply()
	})
	s.at(s.now+simTimeout, func() { s.step(a) })
	a.block()
	return errSimTimeout
}

// releaseStalled lands the requests held back just after an emptying.
func (sv *server) releaseStalled() {
	s := sv.s
	for _, h := range sv.stalled {
		if !h.done {
			s.stats.stalledAfterEmpty++
			s.at(s.now+time.Millisecond+time.Duration(s.lrng.Int64N(int64(20*time.Millisecond))), h.apply)
		}
	}
	sv.stalled = nil
	s.quietUntil = min(s.quietUntil, s.now+simStallLand)
}

// quiet reports whether workers are to claim nothing now.
func (s *sim) quiet() bool { return s.quietFrom <= s.now && s.now < s.quietUntil }

// noteStalledGates counts, among gates landing late, those that still give
// coverage when they land after an emptying (the stalled link's harm).
func (s *sim) noteStalledGates(docs []queue.Doc) {
	if s.server.lastReset == 0 || s.now-s.server.lastReset > simStallSpan {
		return
	}
	for _, d := range docs {
		if d.Kind == queue.KindGate && time.Unix(0, (d.Bucket+2)*int64(simSpan)).Add(-simSkew).After(s.server.now()) {
			s.stats.stalledCovering++
			return
		}
	}
}
