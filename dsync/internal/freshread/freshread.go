// Package freshread shares a read among the callers that ask for it at
// about the same time, and never answers a caller with a read sent before
// it asked. To each caller, a shared read is its own read that took
// longer: sent after the call began, answered before it returns. So a
// caller that reads after its own write, or reads one thing before
// another, keeps that order, and any reasoning that holds for a read of
// any latency holds for a shared one.
//
// dsync's MongoDB store shares its reads of sessions and of the record of
// up-time: after an outage of the store every waiter of a process judges
// at the same moment, most of them the claims of one holder, each with a
// read of the record and of that holder's session, and on FerretDB each
// such read decodes the whole sessions collection.
package freshread

import (
	"context"
	"sync"
)

// A Group shares reads by key. A read is asked with an argument; a read
// in flight answers a caller only if it was sent after the caller asked
// and its argument covers the caller's. The zero Group shares reads whose
// arguments never differ (a read of the key alone).
type Group[K comparable, A, V any] struct {
	// Covers reports whether a read asked with a answers a caller that
	// asks with b; nil: every read answers every caller.
	Covers func(a, b A) bool
	// Merge returns an argument whose read answers the callers of a and
	// of b; nil: a.
	Merge func(a, b A) A

	mu    sync.Mutex
	sends uint64 // reads sent so far, of every key
	slots map[K]*slot[A, V]
}

// slot is the state of one key: the read in flight, the last read that
// ended, and the merged argument of the callers waiting for the next one.
type slot[A, V any] struct {
	refs   int // calls of Do on the key, not yet returned
	flight *flight[A, V]
	// last is the read that ended last, kept while calls of the key are
	// in: a caller that waited for a read it could not join may wake only
	// after the next read, sent for it, has ended too; that one still
	// answers it, rather than a read of its own.
	last       *flight[A, V]
	waiting    A
	hasWaiting bool
}

// flight is one read sent.
type flight[A, V any] struct {
	seq  uint64 // Group.sends just after it was sent
	arg  A
	done chan struct{} // closed once v and err are set
	v    V
	err  error
	// abandoned: its sender's context ended before the read did, so its
	// error is the sender's, not the read's; its joiners ask again.
	abandoned bool
}

// Do returns the answer of a read of key with arg: read's own, called
// with ctx, or that of a read another caller sent after this call began,
// with an argument that covers arg. If ctx ends first, Do returns its
// error. A shared read's error is returned as it came, unless it came
// from its sender's context, which ended: then Do asks again.
func (g *Group[K, A, V]) Do(ctx context.Context, key K, arg A, read func(context.Context, A) (V, error)) (V, error) {
	g.mu.Lock()
	s := g.slot(key)
	asked := g.sends
	defer func() {
		g.mu.Lock()
		if s.refs--; s.refs == 0 {
			delete(g.slots, key)
		}
		g.mu.Unlock()
	}()
	for {
		if l := s.last; l != nil && g.answers(l, asked, arg) && !l.abandoned {
			g.mu.Unlock()
			return l.v, l.err
		}
		f := s.flight
		if f == nil {
			return g.send(ctx, s, arg, read)
		}
		joins := g.answers(f, asked, arg)
		if !joins {
			// Wait for it to end, and have the next read cover arg.
			if s.hasWaiting {
				s.waiting = g.merge(s.waiting, arg)
			} else {
				s.waiting, s.hasWaiting = arg, true
			}
		}
		g.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
		if joins && !f.abandoned {
			return f.v, f.err
		}
		if testHookWoke != nil {
			testHookWoke(ctx)
		}
		g.mu.Lock()
	}
}

// testHookWoke, when set by a test, is called by a caller woken by the end
// of a read that did not answer it, before it looks again.
var testHookWoke func(ctx context.Context)

// answers reports whether read f answers a caller that asked with arg
// when asked reads had been sent: f was sent after it, and covers arg.
func (g *Group[K, A, V]) answers(f *flight[A, V], asked uint64, arg A) bool {
	return f.seq > asked && (g.Covers == nil || g.Covers(f.arg, arg))
}

// merge is Merge, or a without one.
func (g *Group[K, A, V]) merge(a, b A) A {
	if g.Merge == nil {
		return a
	}
	return g.Merge(a, b)
}

// slot returns key's slot, counting a call of Do on it; g.mu is held.
func (g *Group[K, A, V]) slot(key K) *slot[A, V] {
	if g.slots == nil {
		g.slots = make(map[K]*slot[A, V])
	}
	s := g.slots[key]
	if s == nil {
		s = &slot[A, V]{}
		g.slots[key] = s
	}
	s.refs++
	return s
}

// send sends a read with arg, merged with the arguments of the callers
// waiting, and answers them; g.mu is held, and released.
func (g *Group[K, A, V]) send(ctx context.Context, s *slot[A, V], arg A, read func(context.Context, A) (V, error)) (V, error) {
	if s.hasWaiting {
		arg = g.merge(arg, s.waiting)
		var zero A
		s.waiting, s.hasWaiting = zero, false
	}
	g.sends++
	f := &flight[A, V]{seq: g.sends, arg: arg, done: make(chan struct{})}
	s.flight = f
	g.mu.Unlock()
	// Should read panic, the flight still ends: its joiners then ask
	// again (abandoned), and one of them sends.
	defer func() {
		g.mu.Lock()
		s.flight, s.last = nil, f
		g.mu.Unlock()
		close(f.done)
	}()
	f.abandoned = true
	f.v, f.err = read(ctx, arg)
	f.abandoned = f.err != nil && ctx.Err() != nil
	return f.v, f.err
}

// Callers returns how many calls of Do on key have not returned: a test
// waits for its callers to be in before it lets a read end.
func (g *Group[K, A, V]) Callers(key K) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.slots[key]; s != nil {
		return s.refs
	}
	return 0
}
