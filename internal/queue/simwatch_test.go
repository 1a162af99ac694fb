package queue_test

import (
	"context"
	"math/rand/v2"
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
// store fell into is not recorded, as the observer's. Its draws (and its
// requests' delays) come from a generator of its own, and it writes
// nothing, so that a seed runs as it did without it.
func (o *owner) reader(a *actor, keys []string) {
	s, ctx := o.s, a.ctx()
	var key string
	again := 0 // reads of key left to make soon: it showed a claim expired
	for s.now < simLength {
		if again > 0 {
			again--
			a.sleep(time.Duration(5+a.rng.IntN(10)) * time.Millisecond)
		} else {
			a.sleep(time.Duration(20+a.rng.IntN(60)) * time.Millisecond)
			key = keys[a.rng.IntN(len(keys))]
		}
		sent := s.now
		head, found, expired, err := o.readHead(ctx, key)
		s.tracef("READ %s by %s sent %v -> %v %v %v", key, o.name, sent, head, found, err)
		if expired && again == 0 {
			again = readAgain
		}
		if err != nil || !found || s.server.lastReset >= sent {
			continue
		}
		s.log = append(s.log, history.Event{Ev: history.EvPoll, Worker: o.name + "-reader", PID: 2000 + o.pid, Key: key, Token: head.Epoch, Owner: head.Owner, T: int64(sent)})
	}
}

// readAgain is how many times in a row a reader reads a key again soon
// once a read of it showed a claim expired that no claimer has ended yet:
// a late renewal that lands in that spell is what could make the claim
// look live again.
const readAgain = 30

// spawnReader starts o's reader.
func (s *sim) spawnReader(o *owner) {
	s.spawn(o, func(a *actor) {
		a.rng = rand.New(rand.NewPCG(uint64(s.seed), readerSeed+uint64(o.pid)))
		o.reader(a, s.keys)
	})
}

// readerSeed tells the readers' random numbers from the world's.
const readerSeed = 0x72656164

// readHead returns the first claim of key's queue that holds, as a dsync
// Client's Queue reads it (see reader); found is false when none does;
// expired reports whether a claim was read expired.
func (o *owner) readHead(ctx context.Context, key string) (head queue.Doc, found, expired bool, err error) {
	now := ownerClock{o}.ServerNow
	docs, err := o.eng.QueueRead(ctx, key, now)
	if err != nil {
		return queue.Doc{}, false, false, err
	}
	earliest := now().Earliest
	var live []queue.Doc
	for _, d := range docs {
		sess, ok, err := net{o.s}.GetSession(ctx, d.Session)
		if err != nil {
			return queue.Doc{}, false, false, err
		}
		if o.eng.ReadExpired(d, sess, ok, earliest, true) {
			expired = true
		} else {
			live = append(live, d)
		}
	}
	for i, holds := range queue.Holding(live) {
		if holds {
			return live[i], true, expired, nil
		}
	}
	return queue.Doc{}, false, expired, nil
}
