package dsyncmongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// What a store writes on the way out (the long-expired sessions Close
// deletes, the events a stopping stream found left over, its cursor) is
// best effort: sweeps and other processes do it too. So Close gives all
// of it one deadline, closeCleanTime, and none at all when the server
// left a write unanswered and has answered none since: a program that
// closes its backend because the server is gone must not wait for it.

// noteAnswer records what became of a write sent at sent (on cfg.mono's
// scale) that returned err: the server answered it when err is nil or an
// error the server sent; otherwise (no reply in time, a broken
// connection, the caller gave up) it did not.
func (w *writer) noteAnswer(sent time.Duration, err error) {
	var se mongo.ServerError
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil || errors.As(err, &se) {
		w.answeredAt = max(w.answeredAt, w.cfg.mono())
	} else {
		w.unansweredSent = max(w.unansweredSent, sent)
	}
}

// unreachable reports whether the server has answered no write since it
// left one unanswered: it seems gone.
func (w *writer) unreachable() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unansweredSent > w.answeredAt
}

// beginClose starts the deadline that every write on the way out shares
// (cleanupContext): closeCleanTime from now, or already past when the
// server seems gone. The way out begins when the Client stops following
// the wake-up stream (its Close does, before it closes the store), or at
// Close.
func (w *writer) beginClose() {
	d := closeCleanTime
	if w.unreachable() {
		d = 0
	}
	deadline := time.Now().Add(d)
	w.closeBy.CompareAndSwap(nil, &deadline)
}

// cleanupContext returns the context of a best-effort write on the way
// out: bounded by the deadline of the way out once it has begun, else by
// d from now, or already ended when the server seems gone. Its caller
// skips the write if the context has ended already.
func (w *writer) cleanupContext(d time.Duration) (context.Context, context.CancelFunc) {
	if by := w.closeBy.Load(); by != nil {
		return context.WithDeadline(context.Background(), *by)
	}
	if w.unreachable() {
		d = 0
	}
	return context.WithTimeout(context.Background(), d)
}
