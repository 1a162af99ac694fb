package queue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/integration/history"
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
// nothing, so that a seed runs as it did without it. A head whose session
// the read found missing, or without its first generation, is not
// recorded: such a claim is not expired by the rule the engine ends
// claims with, until a claimer ends it, and the memory of the sessions
// found expired lasts two TTLs past the expiry found (ReadExpired), so
// once the sessions are dropped a read past that memory may name a claim
// whose successor it named before.
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
		if err != nil || !found || s.server.lastReset >= sent || head.missing {
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
func (o *owner) readHead(ctx context.Context, key string) (head readClaim, found, expired bool, err error) {
	now := ownerClock{o}.ServerNow
	docs, err := o.eng.QueueRead(ctx, key, now)
	if err != nil {
		return readClaim{}, false, false, err
	}
	earliest := now().Earliest
	// The record of up-time before the sessions, as a Client's Queue
	// reads it (nothing on a seed without an outage grace).
	ev, err := o.eng.ReadEvidence(ctx, docs, earliest)
	if err != nil {
		return readClaim{}, false, false, err
	}
	var live []queue.Doc
	var missing []bool
	for _, d := range docs {
		sess, ok, err := net{o.s}.GetSession(ctx, d.Session)
		if err != nil {
			return readClaim{}, false, false, err
		}
		if o.eng.ReadExpired(d, sess, ok, earliest, true, ev) {
			expired = true
			o.s.foundExpired(o, d, sess, ok, earliest)
		} else {
			o.s.foundLive(o, d, earliest)
			live, missing = append(live, d), append(missing, !ok || !sess.HasFirst)
		}
	}
	for i, holds := range queue.Holding(live) {
		if holds {
			return readClaim{live[i], missing[i]}, true, expired, nil
		}
	}
	return readClaim{}, false, expired, nil
}

// readClaim is a claim as a reader read it: missing, its session was
// found missing or without its first generation.
type readClaim struct {
	queue.Doc
	missing bool
}

// foundExpired notes that o's reader found claim d expired by its session
// (s, found), as ReadExpired remembers it: found with its first
// generation, expired by earliest, with a TTL. ReadExpired reports it
// expired to the reader's later reads until two of its TTLs (and its
// grace) past that expiry, whatever they find.
func (s *sim) foundExpired(o *owner, d queue.Doc, sess queue.Session, found bool, earliest time.Time) {
	if !found || !sess.HasFirst || !sess.ExpiresAt.Before(earliest) || d.TTL <= 0 {
		return
	}
	if _, ok := s.readDead[readOf{o.pid, d.Nonce}]; !ok {
		// (The grace too for a claim with one, on the outage seeds.)
		s.readDead[readOf{o.pid, d.Nonce}] = readDead{until: sess.ExpiresAt.Add(2*d.TTL + d.Grace), reset: s.server.lastReset}
	}
}

// foundLive checks that a reader of o found claim d live only past the
// memory of its finding it expired (foundExpired), or after a reset.
func (s *sim) foundLive(o *owner, d queue.Doc, earliest time.Time) {
	if f, ok := s.readDead[readOf{o.pid, d.Nonce}]; ok && earliest.Before(f.until) && f.reset == s.server.lastReset {
		s.readBack = append(s.readBack, fmt.Sprintf("%s-reader read %s#%d live at %v, expired before (remembered until %v)",
			o.name, d.Key, d.Epoch, s.now, f.until.Sub(s.t0)))
	}
}

// readOf names a claim (by nonce) as one owner's reader read it: each
// owner's engine remembers what its own reads found.
type readOf struct {
	pid   int
	nonce string
}

// readDead is what a reader found expired: until when it must stay so,
// and the store's last reset then.
type readDead struct {
	until time.Time
	reset time.Duration
}
