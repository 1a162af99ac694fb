package dsync

import (
	"context"
	"fmt"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/internal/ctxerr"
)

// Reads prepare only for reading. prepare (client.go) readies the store
// for writes: on MongoDB it creates the collections and the lock index
// and samples the server's clock with a write, and agree inserts the
// store's protocol document and starts the sweeper, which deletes. A
// read (statuspage.Reader's) must work with a
// database user that may only read (dsync status, the status page), and
// leave a database nothing has used as empty as it found it: it readies
// the store with its driver.Roles.Reads where it has them, and learns
// the store's bucket span by reading the protocol document; the Client's
// first claim prepares and agrees as ever.
//
// Nor does a read write or teach the engine anything else: it reads a
// key's queue with queue.Engine.QueueRead, which inserts no dead marker
// for a claim whose session has expired (the engine's walks do, judged by
// the store's ServerTime, the clock of the writes) and records no gate or
// session it read, and it judges by readNow only what it reports
// (statuspage.ClaimInfo.Expired; the only thing a read keeps is that a session it
// found expired by the clock of the writes stays so for the Client's
// later reports, queue.Engine.ReadExpired, which no walk consults). On
// MongoDB before Prepare that clock is a hello sample, behind a mongos
// the router's, which may be off the shard's: a marker judged by it
// could end a live claim and give two holders.

// prepareStoreRead readies the store for reads (driver.Roles.Reads), or
// with Prepare if it cannot do that without writing.
func (c *Client) prepareStoreRead(ctx context.Context) error {
	if c.isClosed() {
		return ErrClosed
	}
	if rp := c.roles.Reads; rp != nil {
		return rp.PrepareRead(ctx)
	}
	return c.store.Prepare(ctx)
}

// readNow is the store's time for reads (driver.Roles.Reads'
// ReadServerTime), or ServerTime for a store prepared with Prepare.
func (c *Client) readNow() driver.Interval {
	if rp := c.roles.Reads; rp != nil {
		return rp.ReadServerTime()
	}
	return c.store.ServerTime()
}

// readsByWriteClock reports whether readNow is the clock the writes are
// judged by: the store's ServerTime, which a store without
// driver.Roles.Reads reads by anyway, and the role's ReadServerTime
// once the Client agreed (after Prepare, which started that clock).
func (c *Client) readsByWriteClock() bool {
	return c.roles.Reads == nil || c.agreed.Load()
}

// prepareRead readies the store for reads of keys' queues: the store,
// and the engine's bucket span, adopted from the store's protocol
// document without writing it. A store without the document (nothing has
// claimed in it) leaves the span as it is. Until the Client agrees (its
// first claim), every call reads the document again (one read by ID, once
// per Reader.Queue or Reader.List): a store emptied and written first by a process of
// another span records that span, and a span learnt once would have every
// key's queue read under the old one's gates, and found idle.
func (c *Client) prepareRead(ctx context.Context) error {
	if err := c.prepareStoreRead(ctx); err != nil {
		return err
	}
	select {
	case c.agreeing <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-c.agreeing }()
	if c.agreed.Load() {
		return nil
	}
	if _, err := c.eng.LearnSpan(ctx, c.cfg.spanSet); err != nil {
		if e := ctxerr.EndedBy(ctx, "dsync: agree on the bucket span", err); e != nil {
			return e
		}
		return spanError(c.cfg.spanSet, fmt.Errorf("dsync: %w", err))
	}
	return nil
}
