// Package statusread reads and judges a key's queue for people (dsync
// status, the status page, through package statuspage's Reader), and
// lists the keys of a store's directory with their queues.
//
// The contract: it only reads, creates nothing and needs only the read
// role. A queue is judged as the engine judges it (dsync/internal/queue):
// a claim is Expired by queue.Engine.ReadExpired, the rule the engine ends
// claims with, read with the store's time taken before the sessions and
// the record of up-time read before them too; among the claims not
// Expired, Holds follows the grant rule (queue.Holding). A claim's
// ExpiresAt is the later of its own and its session's. The caller
// prepares the store for reading first (dsync/prepare_read.go): a listing
// prepares once for all its keys.
package statusread

import (
	"context"
	"fmt"
	"iter"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/readahead"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// A Reader reads the queues of one Client's store.
type Reader struct {
	Engine *queue.Engine
	Store  driver.Store
	// Now is the store's time for reads.
	Now func() driver.Interval
	// ByWriteClock reports whether Now is the clock the writes are
	// judged by.
	ByWriteClock func() bool
}

// Queue reads key's queue (key as stored) and judges it; docs[i] is the
// claim document of q[i].
func (r Reader) Queue(ctx context.Context, key string) (docs []queue.Doc, q []clienthook.Claim, err error) {
	docs, err = r.Engine.QueueRead(ctx, key, r.Now)
	if err != nil {
		return nil, nil, err
	}
	// The store's time before the sessions are read, as the engine judges
	// (unended): a session read later can only have been renewed since.
	// Taken once it is known whether it is the clock of the writes.
	remember := r.ByWriteClock()
	earliest := r.Now().Earliest
	// The record of up-time, for claims with an outage grace, is read
	// before the sessions, as the engine reads it.
	ev, err := r.Engine.ReadEvidence(ctx, docs, earliest)
	if err != nil {
		return nil, nil, err
	}
	q = make([]clienthook.Claim, len(docs))
	expired := make([]bool, len(docs))
	for i, d := range docs {
		q[i] = clienthook.Claim{Key: key, Token: d.Epoch, Owner: d.Owner, Session: d.Session, Nonce: d.Nonce,
			Host: d.Host, PID: d.PID, QueuedAt: d.Sent, ExpiresAt: d.Exp, Mode: int(d.Mode), Weight: d.Weight, Limit: d.Limit, Waiter: d.Waiter}
		s, found, err := r.Store.GetSession(ctx, d.Session)
		if err != nil {
			return nil, nil, err
		}
		if found && s.ExpiresAt.After(q[i].ExpiresAt) {
			q[i].ExpiresAt = s.ExpiresAt
		}
		expired[i] = r.Engine.ReadExpired(d, s, found, earliest, remember, ev)
	}
	markHolds(q, docs, expired)
	return docs, q, nil
}

// markHolds sets Expired on the claims of q (read as docs) that expired
// (queue.Engine.ReadExpired, the rule the engine ends claims with), and
// Holds by the grant rule among the others: the next process that claims
// or waits on the key ends an expired claim (its owner stopped relying on
// it at its local deadline, earlier still), and the claims behind it go
// on as if it had ended.
func markHolds(q []clienthook.Claim, docs []queue.Doc, expired []bool) {
	var live []queue.Doc
	var at []int
	for i := range q {
		q[i].Expired = expired[i]
		if !q[i].Expired {
			live, at = append(live, docs[i]), append(at, i)
		}
	}
	for j, h := range queue.Holding(live) {
		q[at[j]].Holds = h
	}
}

// ListAhead is how many keys' queues List reads at once, at most: the one
// its caller waits for and those after it. Each queue is a few point reads, one after another; reading
// the queues of a page's keys side by side makes a page cost about the
// round trips of a few keys, not of all of them.
const ListAhead = 8

// List yields the keys of the directory that kq selects, each with its
// queue as read reads it, reading a few queues ahead of the caller. A
// negative limit is an error, before anything is read; then open returns
// the directory, ready for reading, or why it cannot.
func List(ctx context.Context, kq driver.KeyQuery, open func() (driver.KeyDirectory, error),
	read func(ctx context.Context, key string) ([]clienthook.Claim, error)) iter.Seq2[clienthook.KeyState, error] {
	return func(yield func(clienthook.KeyState, error) bool) {
		if kq.Limit < 0 {
			yield(clienthook.KeyState{}, fmt.Errorf("dsync: limit must not be negative, got %d", kq.Limit))
			return
		}
		dir, err := open()
		if err != nil {
			yield(clienthook.KeyState{}, err)
			return
		}
		keys := func(ctx context.Context) iter.Seq2[string, error] { return dir.ListKeys(ctx, kq) }
		listErr := func(err error) error { return fmt.Errorf("dsync: list keys: %w", err) }
		for it, err := range readahead.Seq(ctx, ListAhead, keys, read, listErr) {
			if !yield(clienthook.KeyState{Key: it.Key, Queue: it.Val}, err) || err != nil {
				return
			}
		}
	}
}
