package queue_test

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/internal/queue"
)

// reader polls the head of the queue as a dsync Client's Queue reads it
// (and Election.Leader with it): QueueRead, which judges nothing, then
// each claim's session, ReadExpired with its memory of the sessions it
// found expired, and the grant rule among the claims not expired
// (dsync/queue.go). The first claim that holds is its head. Unlike the
// engine's Head (observer), this read writes nothing, so a claim's end
// waits for a claimer, and the memory is all that keeps a late renewal
// from making a claim read expired live again. A poll that a reset of the
// store fell into is not recorded, as the observer's.
func (o *owner) reader(a *actor, keys []string) {
	s, ctx := o.s, a.ctx()
	for s.now < simLength {
		a.sleep(time.Duration(20+s.rng.IntN(60)) * time.Millisecond)
		key := keys[s.rng.IntN(len(keys))]
		sent := s.now
		head, found, err := o.readHead(ctx, key)
		s.tracef("READ %s by %s sent %v -> %v %v %v", key, o.name, sent, head, found, err)
		if err != nil || !found || s.server.lastReset >= sent {
			continue
		}
		s.log = append(s.log, history.Event{Ev: history.EvPoll, Worker: o.name + "-reader", PID: 2000 + o.pid, Key: key, Token: head.Epoch, Owner: head.Owner, T: int64(sent)})
	}
}

// readHead returns the first claim of key's queue that holds, as a dsync
// Client's Queue reads it (see reader); found is false when none does.
func (o *owner) readHead(ctx context.Context, key string) (head queue.Doc, found bool, err error) {
	now := ownerClock{o}.ServerNow
	docs, err := o.eng.QueueRead(ctx, key, now)
	if err != nil {
		return queue.Doc{}, false, err
	}
	earliest := now().Earliest
	var live []queue.Doc
	for _, d := range docs {
		sess, ok, err := net{o.s}.GetSession(ctx, d.Session)
		if err != nil {
			return queue.Doc{}, false, err
		}
		if !o.eng.ReadExpired(d, sess, ok, earliest, true) {
			live = append(live, d)
		}
	}
	for i, holds := range queue.Holding(live) {
		if holds {
			return live[i], true, nil
		}
	}
	return queue.Doc{}, false, nil
}
