package dsyncmongo

import (
	"context"
	"fmt"
	"time"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
)

// Reads without writes.
//
// Prepare creates the lock collection's index and samples the server's
// clock with a write (servertime.go): a user that may only read (an
// operator's status page, dsync status) is refused both, and a read of a
// database nothing has used would leave dsync's collections in it.
// PrepareRead serves reads instead with what a read-only user may do: it
// detects the deployment (buildInfo, hello) and samples the server's
// clock with hello, whose localTime is the clock of the server that
// answers. On a single server or a replica set that is the primary's
// clock, the one that orders the writes; behind a mongos it is the
// router's, which may be off the primary's by the routers' skew: what a
// read reports of expiries (which claim holds) may then be off by as
// much. So ServerTime, the clock the engine judges expiry with, never
// answers from this sample: reads get it from ReadServerTime, and nothing
// a process relies on or writes is judged by it (a Client claims only
// after Prepare, whose write samples replace these). Finds on a
// collection that does not exist find nothing and create nothing.

// PrepareRead implements driver.ReadPreparer: it detects the deployment
// and starts a server-time estimator that samples with hello, once,
// unless Prepare already started its own. It writes nothing. Its
// estimator serves ReadServerTime and ServerNowRead only, never
// ServerTime, the clock the engine judges expiry with.
func (s storeRoles) PrepareRead(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.clock.prepared() {
		return nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-s.sem }()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.clock.prepared() {
		return nil
	}
	if err := s.platform.probe(ctx); err != nil {
		return err
	}
	return s.clock.startRead(ctx, s.platform.memberSkew(s.platform.topo))
}

// ServerNowRead is ServerNow for readers: it writes nothing. It returns the
// interval the server's current time lies in. If a call has prepared the
// store for writes, it comes from the estimate the store judges expiry
// with. Otherwise it comes from one that samples with hello (PrepareRead),
// which writes nothing. Package leadermongo reads its member documents'
// ages with it, so that listing members (dsync status, the status page)
// needs only the read role.
func (s *Store) ServerNowRead(ctx context.Context) (clockcheck.Interval, error) {
	if err := (storeRoles{s}).PrepareRead(ctx); err != nil {
		return clockcheck.Interval{}, err
	}
	e := s.clock.forReads()
	if e == nil { // Close retired the estimators meanwhile
		return clockcheck.Interval{}, ErrClosed
	}
	return e.Now(), nil
}

// ReadServerTime implements driver.ReadPreparer: ServerTime once Prepare
// has started its estimator, else PrepareRead's (hello) sample, else the
// zero Interval. A Client reports with it which claims' sessions look
// expired; it never judges a write with it.
func (s storeRoles) ReadServerTime() driver.Interval {
	e := s.clock.forReads()
	if e == nil {
		return driver.Interval{}
	}
	iv := e.Now()
	return driver.Interval{Earliest: iv.Earliest, Latest: iv.Latest}
}

// startRead starts, once the deployment is known (its member skew,
// skew), the estimator that samples with hello; the store's preparation
// lock is held.
func (c *serverClock) startRead(ctx context.Context, skew time.Duration) error {
	e, err := clockcheck.NewEstimator(ctx, c.db, c.options(skew)...)
	if err != nil {
		return fmt.Errorf("dsyncmongo: measuring the server's clock: %w", err)
	}
	c.readEst.Store(e)
	return nil
}

// retireRead stops the reads' estimator once Prepare's exists
// (ServerTime prefers Prepare's), or at Close; the store's preparation
// lock is held.
func (c *serverClock) retireRead() {
	if e := c.readEst.Swap(nil); e != nil {
		_ = e.Close()
	}
}

// forReads returns Prepare's estimator if it has one, else
// PrepareRead's; nil before either (or after Close).
//
// readEst is loaded before est. start stores est first and only then
// retires readEst (Swap(nil)), and atomics are sequentially consistent,
// so a nil readEst read here means either that PrepareRead has not run
// or that est was already stored before, and the later load of est sees
// it. Loaded the other way round, a reader could load est (nil, not yet
// stored), then find readEst retired by a start that ran in between,
// and report no estimator at all, although one of the two always existed
// (only Close leaves both nil).
func (c *serverClock) forReads() *clockcheck.Estimator {
	r := c.readEst.Load()
	if e := c.est.Load(); e != nil {
		return e
	}
	return r
}

// prepared reports whether Prepare or PrepareRead has started an
// estimator (readEst first: see forReads).
func (c *serverClock) prepared() bool { return c.forReads() != nil }

// options are the options of both estimators (Prepare's, which samples
// with the store's probe, and PrepareRead's, which samples with hello):
// the store's clock, logger and the member skew, then extra, then those
// the store was configured with, which come last so that they win.
func (c *serverClock) options(skew time.Duration, extra ...clockcheck.Option) []clockcheck.Option {
	opts := []clockcheck.Option{
		clockcheck.WithClock(c.cfg.clock), clockcheck.WithLogger(c.cfg.logger),
		clockcheck.WithMemberSkew(skew),
	}
	opts = append(opts, extra...)
	return append(opts, c.cfg.estimator...)
}
