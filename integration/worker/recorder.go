package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/integration/history"
)

type leaseID struct {
	key   string
	token uint64
}

// predSession is what the recorder knows of one session.
type predSession struct {
	deadline int64 // predicted local deadline
	retired  bool  // deadline passed before a renewal was confirmed, or gone
}

// predHold is a claim that holds, in a session.
type predHold struct {
	session string
	nonce   string
}

// recorder predicts each hold's local deadline from the send and reply
// times of the backend calls, by the rule dsync documents. A hold's
// deadline is its session's: the send time of the session's last open or
// renewal confirmed before the deadline in force, plus the TTL, minus
// TTL/20. A session whose deadline passes before a renewal is confirmed
// (or that the backend reports gone) is retired for good: a later reply
// counts for nothing. A hold begins when Await returns nil, or Claim with
// try returns a claim, with its session's deadline at that moment (none
// if it has passed); each later renewal of the session confirmed in time
// moves every hold of the session to its send time plus TTL − TTL/20; End
// forgets the claim.
//
// It writes each hold's deadline to the history when the hold begins and
// whenever it moves, before the library sees the reply, so a worker
// killed right after a renewal still leaves it on record. Its send times
// are read after the library's, so its deadlines are never earlier than
// the library's (by microseconds); the checker flags a library deadline
// later than the prediction: that would be a late reply counted.
type recorder struct {
	w           *worker
	ttl, margin int64

	mu       sync.Mutex
	sessions map[string]*predSession
	holds    map[leaseID]*predHold
}

func newRecorder(w *worker, ttl time.Duration) *recorder {
	return &recorder{w: w, ttl: int64(ttl), margin: int64(ttl / 20),
		sessions: make(map[string]*predSession), holds: make(map[leaseID]*predHold)}
}

// opened records a session opened by a request sent at sent whose reply
// arrived at reply.
func (r *recorder) opened(id string, sent, reply int64) {
	dl := sent + r.ttl - r.margin
	if reply >= dl {
		return // the library will not use it either
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[id] = &predSession{deadline: dl}
}

// renewed records a renewal of session id, sent at sent and confirmed at
// reply, and moves the deadline of the session's holds.
func (r *recorder) renewed(id string, sent, reply int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[id]
	if s == nil || s.retired {
		return
	}
	if reply >= s.deadline {
		s.retired = true // confirmed too late to count: the session is over
		return
	}
	dl := sent + r.ttl - r.margin
	if dl <= s.deadline {
		return
	}
	s.deadline = dl
	for lid, h := range r.holds {
		if h.session == id {
			r.w.emit(history.Event{Ev: history.EvDeadline, Key: lid.key, Token: lid.token, T: reply, DL: dl, Src: history.SrcPred})
		}
	}
}

// gone records that the backend no longer knows session id.
func (r *recorder) gone(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.sessions[id]; s != nil {
		s.retired = true
	}
}

// holding records that claim c began to hold at t.
func (r *recorder) holding(c dsync.Claim, t int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[c.Session]
	if s == nil || s.retired || t >= s.deadline {
		return // the library will not count the hold either
	}
	r.holds[leaseID{c.Key, c.Token}] = &predHold{session: c.Session, nonce: c.Nonce}
	r.w.emit(history.Event{Ev: history.EvDeadline, Key: c.Key, Token: c.Token, T: t, DL: s.deadline, Src: history.SrcPred})
}

// ended forgets claim c once its end was sent.
func (r *recorder) ended(c dsync.Claim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := leaseID{c.Key, c.Token}
	if h := r.holds[id]; h != nil && h.nonce == c.Nonce {
		delete(r.holds, id)
	}
}

// deadline returns the predicted deadline of a hold (0 if unknown).
func (r *recorder) deadline(key string, token uint64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.holds[leaseID{key, token}]
	if h == nil {
		return 0
	}
	if s := r.sessions[h.session]; s != nil {
		return s.deadline
	}
	return 0
}

// forget drops a hold.
func (r *recorder) forget(key string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.holds, leaseID{key, token})
}

// recordingLocks is a dsync.Backend that tells the recorder about every
// session opened and renewed, and every claim that begins to hold or
// ends.
type recordingLocks struct {
	dsync.Backend
	rec *recorder
}

func recordLocks(b dsync.Backend, rec *recorder) dsync.Backend {
	return &recordingLocks{Backend: b, rec: rec}
}

func (b *recordingLocks) OpenSession(ctx context.Context, ttl time.Duration) (string, error) {
	return recordOpen(ctx, b.rec, b.Backend, ttl)
}

func (b *recordingLocks) RenewSession(ctx context.Context, session string, ttl time.Duration) error {
	return recordRenew(ctx, b.rec, b.Backend, session, ttl)
}

func (b *recordingLocks) Claim(ctx context.Context, key, owner, session string, try bool) (dsync.Claim, error) {
	return recordClaim(ctx, b.rec, b.Backend, key, owner, session, try)
}

func (b *recordingLocks) Await(ctx context.Context, c dsync.Claim) error {
	return recordAwait(ctx, b.rec, b.Backend, c)
}

func (b *recordingLocks) End(ctx context.Context, c dsync.Claim, held bool) error {
	return recordEnd(ctx, b.rec, b.Backend, c, held)
}

func recordOpen(ctx context.Context, rec *recorder, b dsync.Backend, ttl time.Duration) (string, error) {
	sent := history.Now()
	id, err := b.OpenSession(ctx, ttl)
	if err == nil {
		rec.opened(id, sent, history.Now())
	}
	return id, err
}

func recordRenew(ctx context.Context, rec *recorder, b dsync.Backend, session string, ttl time.Duration) error {
	sent := history.Now()
	err := b.RenewSession(ctx, session, ttl)
	switch {
	case err == nil:
		rec.renewed(session, sent, history.Now())
	case errors.Is(err, dsync.ErrSessionGone):
		rec.gone(session)
	}
	return err
}

func recordClaim(ctx context.Context, rec *recorder, b dsync.Backend, key, owner, session string, try bool) (dsync.Claim, error) {
	c, err := b.Claim(ctx, key, owner, session, try)
	if err == nil && try {
		rec.holding(c, history.Now())
	}
	return c, err
}

func recordAwait(ctx context.Context, rec *recorder, b dsync.Backend, c dsync.Claim) error {
	err := b.Await(ctx, c)
	if err == nil {
		rec.holding(c, history.Now())
	}
	return err
}

func recordEnd(ctx context.Context, rec *recorder, b dsync.Backend, c dsync.Claim, held bool) error {
	// Forgotten before the end is sent: from then on the claim may have
	// ended for others.
	rec.ended(c)
	return b.End(ctx, c, held)
}
