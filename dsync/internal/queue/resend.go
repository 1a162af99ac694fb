package queue

import (
	"context"
	"sync"
	"time"
)

// Bounds of the pause between two Flush calls of a Resender.
const (
	minResend = 100 * time.Millisecond
	maxResend = 5 * time.Second
)

// A Resender sends an engine's pending end markers again in the
// background (Engine.Flush), at growing intervals, until none is left:
// the only path that sends them again (a session's renewal only kicks
// it, so that a renewal confirmed in time is never held up by ends a slow
// store is slow to take). A withdrawal whose outcome was unknown would
// otherwise keep its key waiting until its session expired.
//
// Its goroutine runs only while markers are pending. Close stops it and
// waits for it.
type Resender struct {
	q      *ends
	report func(pending int, err error) // called after each failed Flush

	// ctx bounds the sends; Close cancels it, so as not to wait for a
	// store that does not answer.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	running bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewResender returns a Resender for e. report, if not nil, is told of
// each Flush that left markers pending.
func NewResender(e *Engine, report func(pending int, err error)) *Resender {
	ctx, cancel := context.WithCancel(context.Background())
	return &Resender{q: e.ends, report: report, ctx: ctx, cancel: cancel, stop: make(chan struct{})}
}

// Kick starts the background resend if markers are pending and it is not
// running.
func (r *Resender) Kick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running || r.closed || r.q.Pending() == 0 {
		return
	}
	r.running = true
	r.wg.Add(1)
	go r.run()
}

func (r *Resender) run() {
	defer r.wg.Done()
	wait := minResend
	for {
		t := time.NewTimer(wait)
		select {
		case <-r.stop:
			t.Stop()
			r.done()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(r.ctx, maxResend)
		pending, err := r.q.Flush(ctx)
		cancel()
		if pending == 0 {
			if !r.done() {
				return
			}
			wait = minResend
			continue // an End failed meanwhile
		}
		if r.report != nil {
			r.report(pending, err)
		}
		wait = min(2*wait, maxResend)
	}
}

// done marks the goroutine stopped unless markers became pending again,
// and reports whether it must go on.
func (r *Resender) done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.q.Pending() == 0 {
		r.running = false
		return false
	}
	return true
}

// Close stops the background resend, cancelling a send under way, and
// waits for it. The markers still pending stay pending (Flush).
func (r *Resender) Close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stop)
		r.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
