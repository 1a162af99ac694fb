package dsync

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/readahead"
	"github.com/go-dsync/dsync/internal/clienthook"
)

// What a Client reads for people: the keys of its store (its directory,
// kept by internal/keydir), and each key's queue. Package statuspage's
// Reader presents these reads (clienthook.ClientReads, reads.go) and
// documents their contract: they only read, create nothing and need
// only the read role.

// queueOf is statuspage's Reader.Queue.
func (c *Client) queueOf(ctx context.Context, key string) ([]clienthook.Claim, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	if err := c.prepareRead(ctx); err != nil {
		return nil, err
	}
	return c.readQueue(ctx, key)
}

// readQueue is queueOf for a Client prepared for reading (prepareRead):
// a listing prepares once for all its keys.
func (c *Client) readQueue(ctx context.Context, key string) ([]clienthook.Claim, error) {
	_, q, err := c.judgedQueue(ctx, key)
	return q, err
}

// judgedQueue is readQueue, with the claim documents read (docs[i] is
// q[i]'s).
func (c *Client) judgedQueue(ctx context.Context, key string) ([]queue.Doc, []clienthook.Claim, error) {
	if err := c.checkKey(key); err != nil {
		return nil, nil, err
	}
	docs, err := c.eng.QueueRead(ctx, key, c.readNow)
	if err != nil {
		return nil, nil, err
	}
	// The store's time before the sessions are read, as the engine judges
	// (unended): a session read later can only have been renewed since.
	// Taken once it is known whether it is the clock of the writes.
	remember := c.readsByWriteClock()
	earliest := c.readNow().Earliest
	// The record of up-time, for claims with an outage grace, is read
	// before the sessions, as the engine reads it.
	ev, err := c.eng.ReadEvidence(ctx, docs, earliest)
	if err != nil {
		return nil, nil, err
	}
	q := make([]clienthook.Claim, len(docs))
	expired := make([]bool, len(docs))
	for i, d := range docs {
		q[i] = clienthook.Claim{Key: key, Token: d.Epoch, Owner: d.Owner, Session: d.Session, Nonce: d.Nonce,
			Host: d.Host, PID: d.PID, QueuedAt: d.Sent, ExpiresAt: d.Exp, Mode: int(d.Mode), Weight: d.Weight, Limit: d.Limit}
		s, found, err := c.store.GetSession(ctx, d.Session)
		if err != nil {
			return nil, nil, err
		}
		if found && s.ExpiresAt.After(q[i].ExpiresAt) {
			q[i].ExpiresAt = s.ExpiresAt
		}
		expired[i] = c.eng.ReadExpired(d, s, found, earliest, remember, ev)
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

// list is statuspage's Reader.List: the keys of the directory that kq
// selects, each with its queue, reading a few queues ahead of the caller.
func (c *Client) list(ctx context.Context, q clienthook.KeyQuery) iter.Seq2[clienthook.KeyState, error] {
	kq := driver.KeyQuery{Prefix: q.Prefix, After: q.After, Limit: q.Limit}
	return func(yield func(clienthook.KeyState, error) bool) {
		if kq.Limit < 0 {
			yield(clienthook.KeyState{}, fmt.Errorf("dsync: limit must not be negative, got %d", kq.Limit))
			return
		}
		dir, err := c.directory()
		if err != nil {
			yield(clienthook.KeyState{}, err)
			return
		}
		if err := c.prepareRead(ctx); err != nil {
			yield(clienthook.KeyState{}, err)
			return
		}
		keys := func(ctx context.Context) iter.Seq2[string, error] { return dir.ListKeys(ctx, kq) }
		listErr := func(err error) error { return fmt.Errorf("dsync: list keys: %w", err) }
		for it, err := range readahead.Seq(ctx, listAhead, keys, c.readQueue, listErr) {
			if !yield(clienthook.KeyState{Key: it.Key, Queue: it.Val}, err) || err != nil {
				return
			}
		}
	}
}

// listAhead is how many keys' queues list reads at once, at most: the one
// its caller waits for and those after it. Each queue is a few point reads, one after another; reading
// the queues of a page's keys side by side makes a page cost about the
// round trips of a few keys, not of all of them.
const listAhead = 8

// hasKey is statuspage's Reader.HasKey: one entry of the directory.
func (c *Client) hasKey(ctx context.Context, key string) (bool, error) {
	if err := c.checkKey(key); err != nil {
		return false, err
	}
	dir, err := c.directory()
	if err != nil {
		return false, err
	}
	if err := c.prepareStoreRead(ctx); err != nil {
		return false, err
	}
	return dir.HasKey(ctx, key)
}

// listOrder is statuspage's Reader.ListOrder: a driver.KeyOrder.
func (c *Client) listOrder(ctx context.Context) (int, error) {
	dir, err := c.directory()
	if err != nil {
		return 0, err
	}
	if err := c.prepareStoreRead(ctx); err != nil {
		return 0, err
	}
	return int(dir.KeyOrder()), nil
}

// directory returns the store's directory of keys, or an error wrapping
// errors.ErrUnsupported if it keeps none (driver.Roles.Directory).
func (c *Client) directory() (driver.KeyDirectory, error) {
	if c.roles.Directory == nil {
		return nil, fmt.Errorf("dsync: the store keeps no directory of keys: %w", errors.ErrUnsupported)
	}
	return c.roles.Directory, nil
}
