package dsync

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/queue"
	"github.com/go-dsync/dsync/dsync/internal/statusread"
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
// a listing prepares once for all its keys. dsync/internal/statusread
// judges the queue.
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
	return c.statusReader().Queue(ctx, key)
}

// statusReader reads c's queues for people.
func (c *Client) statusReader() statusread.Reader {
	return statusread.Reader{Engine: c.eng, Store: c.store, Now: c.readNow, ByWriteClock: c.readsByWriteClock}
}

// list is statuspage's Reader.List: the keys of the directory that kq
// selects, each with its queue, reading a few queues ahead of the caller.
func (c *Client) list(ctx context.Context, q clienthook.KeyQuery) iter.Seq2[clienthook.KeyState, error] {
	open := func() (driver.KeyDirectory, error) {
		dir, err := c.directory()
		if err != nil {
			return nil, err
		}
		return dir, c.prepareRead(ctx)
	}
	return statusread.List(ctx, driver.KeyQuery{Prefix: q.Prefix, After: q.After, Limit: q.Limit}, open, c.readQueue)
}

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
