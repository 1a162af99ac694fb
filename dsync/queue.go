package dsync

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// What a Client reads for people: the keys of its store, and each key's
// queue.

// ClaimInfo describes a claim of a key's queue that has not ended.
type ClaimInfo struct {
	Key     string // the key as stored: a namespaced key begins with "dsync:"
	Token   uint64 // the claim's epoch: its fencing token once it holds
	Owner   string // the Mutex (or candidate) that claimed
	Session string
	Nonce   string
	Host    string // the claiming process
	PID     int
	// QueuedAt is the latest possible store time when the claim was sent;
	// ExpiresAt is its session's expiry as read (store time), unless
	// renewed.
	QueuedAt  time.Time
	ExpiresAt time.Time
	// Mode is how the claim shares its key (exclusive: a Mutex's or a
	// writer's, shared: a reader's, weighted: a Semaphore's); Weight and
	// Limit are a weighted claim's units and limit.
	Mode   driver.Mode
	Weight int64
	Limit  int64
}

// Queue returns the claims of key that have not ended, in the order they
// hold: the first holds, or is about to (it may not know yet, and may
// still withdraw); the others wait. It returns none when nothing holds or
// waits for key.
func (c *Client) Queue(ctx context.Context, key string) ([]ClaimInfo, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	if err := c.prepare(ctx); err != nil {
		return nil, err
	}
	docs, err := c.eng.Queue(ctx, key)
	if err != nil {
		return nil, err
	}
	q := make([]ClaimInfo, len(docs))
	for i, d := range docs {
		q[i] = ClaimInfo{Key: key, Token: d.Epoch, Owner: d.Owner, Session: d.Session, Nonce: d.Nonce,
			Host: d.Host, PID: d.PID, QueuedAt: d.Sent, ExpiresAt: d.Exp, Mode: d.Mode, Weight: d.Weight, Limit: d.Limit}
		if s, found, err := c.store.GetSession(ctx, d.Session); err != nil {
			return nil, err
		} else if found && s.ExpiresAt.After(q[i].ExpiresAt) {
			q[i].ExpiresAt = s.ExpiresAt
		}
	}
	return q, nil
}

// Keys returns up to limit keys, in increasing order, that begin with
// prefix and come after after, among those the store holds documents of
// (held, awaited, or kept from earlier holds). Namespaced keys begin with
// "dsync:".
func (c *Client) Keys(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("dsync: limit must be positive, got %d", limit)
	}
	if err := c.prepare(ctx); err != nil {
		return nil, err
	}
	return c.store.Keys(ctx, prefix, after, limit)
}
