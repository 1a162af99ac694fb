package dsync

import (
	"context"
	"fmt"
	"time"
)

// Compaction of idle keys. A key nobody has held for the idle age leaves
// no document in the store: its next Lock starts its queue again, with
// tokens above every one it had (see dsync/internal/queue). A Client with an
// idle age (ClientWithIdleAge; DefaultIdleAge unless set) sweeps now and
// then, under a lock of its own so that one process sweeps
// at a time (two sweeping at once is harmless, only wasted work).

// compact deletes the documents of the keys idle for at least idle
// (statuspage.Compact documents it for operators).
func (c *Client) compact(ctx context.Context, idle time.Duration) (int64, error) {
	if err := c.prepare(ctx); err != nil {
		return 0, err
	}
	n, err := c.eng.Sweep(ctx, idle)
	if err != nil {
		return n, spanError(c.cfg.spanSet, fmt.Errorf("dsync: compact: %w", err))
	}
	return n, nil
}

// startSweeper starts the sweeps (dsync/internal/sweeper), unless the
// Client was told not to sweep; the Client waits for them on Close.
func (c *Client) startSweeper() {
	if c.cfg.idleAge <= 0 {
		return
	}
	c.sweep.Start(&c.running, c.eng.Span, c.sweepOnce)
}

// sweepOnce compacts the idle keys if this Client gets the sweep lock.
func (c *Client) sweepOnce(ctx context.Context) {
	// Its failures are the sweep's, which are only ever retried at the
	// next sweep: reported at Debug, not to the application.
	m, err := NewMutex(c, sweepKey, ownNamespace(sweepKey), withErrorHandler(func(err error) {
		c.cfg.logger.Debug("dsync: sweep lock", "err", err)
	}))
	if err != nil {
		return
	}
	if !m.TryLock() {
		return
	}
	defer m.Unlock()
	// An idle age below four spans (the store's span may be longer than
	// this process was told) is raised to that.
	n, err := c.compact(ctx, max(c.cfg.idleAge, c.eng.MinIdle()))
	if err != nil {
		c.cfg.logger.Debug("dsync: sweep", "err", err)
		return
	}
	if n > 0 {
		c.cfg.logger.Debug("dsync: compacted idle keys", "documents", n)
	}
}
