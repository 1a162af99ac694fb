package dsync

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
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

// sweeper runs a Client's sweeps.
type sweeper struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped bool
}

// startSweeper starts the sweeps, unless the Client was told not to
// sweep; the Client waits for them on Close.
func (c *Client) startSweeper() {
	if c.cfg.idleAge <= 0 {
		return
	}
	c.sweep.mu.Lock()
	defer c.sweep.mu.Unlock()
	if c.sweep.stopped || c.sweep.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.sweep.cancel = cancel
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		c.sweepLoop(ctx)
	}()
}

func (s *sweeper) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
	}
}

// sweepLoop sweeps about once per bucket span, at a random phase so that
// processes started together do not all try at once.
func (c *Client) sweepLoop(ctx context.Context) {
	span := c.eng.Span()
	for {
		wait := span/2 + time.Duration(rand.Int64N(int64(span)))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		c.sweepOnce(ctx)
	}
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
