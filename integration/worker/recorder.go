package worker

import (
	"context"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
)

type leaseID struct {
	key   string
	token uint64
}

// recorder predicts each lease's local deadline from the send and reply
// times of the backend calls, by the rule dsync documents: the send time
// of the last acquire or renewal confirmed before the deadline in force,
// plus the TTL, minus TTL/20. It writes each new deadline to the history
// before the library sees the reply, so a worker killed right after a
// renewal still leaves it on record. Its send times are read after the
// library's, so its deadlines are never earlier than the library's (by
// microseconds); the checker flags a library deadline later than the
// prediction: that would be a late reply counted.
type recorder struct {
	w           *worker
	ttl, margin int64

	mu sync.Mutex
	dl map[leaseID]int64
}

func (r *recorder) acquired(l dsync.Lease, sent, reply int64) {
	dl := sent + r.ttl - r.margin
	if reply >= dl {
		return // the library will not count it either
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dl[leaseID{l.Key, l.Token}] = dl
	r.w.emit(history.Event{Ev: history.EvDeadline, Key: l.Key, Token: l.Token, T: reply, DL: dl, Src: history.SrcPred})
}

func (r *recorder) renewed(leases []dsync.Lease, applied []bool, sent, reply int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, l := range leases {
		if i >= len(applied) || !applied[i] {
			continue
		}
		id := leaseID{l.Key, l.Token}
		cur, ok := r.dl[id]
		if !ok || reply >= cur {
			continue // not held, or confirmed too late to count
		}
		if dl := sent + r.ttl - r.margin; dl > cur {
			r.dl[id] = dl
			r.w.emit(history.Event{Ev: history.EvDeadline, Key: l.Key, Token: l.Token, T: reply, DL: dl, Src: history.SrcPred})
		}
	}
}

// deadline returns the predicted deadline of a lease (0 if unknown).
func (r *recorder) deadline(key string, token uint64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dl[leaseID{key, token}]
}

func (r *recorder) forget(key string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.dl, leaseID{key, token})
}

// recordingLocks is a dsync.Backend that tells the recorder about every
// acquire and renewal.
type recordingLocks struct {
	dsync.Backend
	rec *recorder
}

// recordLocks wraps b, keeping its optional dsync.Waiter.
func recordLocks(b dsync.Backend, rec *recorder) dsync.Backend {
	r := &recordingLocks{Backend: b, rec: rec}
	if w, ok := b.(dsync.Waiter); ok {
		return &struct {
			*recordingLocks
			dsync.Waiter
		}{r, w}
	}
	return r
}

func (b *recordingLocks) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (dsync.Lease, error) {
	return recordAcquire(ctx, b.rec, b.Backend, key, owner, ttl)
}

func (b *recordingLocks) Renew(ctx context.Context, ttl time.Duration, leases []dsync.Lease) ([]bool, error) {
	return recordRenew(ctx, b.rec, b.Backend, ttl, leases)
}

func recordAcquire(ctx context.Context, rec *recorder, b dsync.Backend, key, owner string, ttl time.Duration) (dsync.Lease, error) {
	sent := history.Now()
	l, err := b.Acquire(ctx, key, owner, ttl)
	if err == nil {
		rec.acquired(l, sent, history.Now())
	}
	return l, err
}

func recordRenew(ctx context.Context, rec *recorder, b dsync.Backend, ttl time.Duration, leases []dsync.Lease) ([]bool, error) {
	sent := history.Now()
	applied, err := b.Renew(ctx, ttl, leases)
	if err == nil {
		rec.renewed(leases, applied, sent, history.Now())
	}
	return applied, err
}
