package dsyncmongo

import (
	"context"
	"fmt"

	"github.com/go-dsync/dsync/clockcheck"
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
// much. Nothing a process relies on is learned from a read (a Client
// claims only after Prepare, whose write samples replace these), and
// finds on a collection that does not exist find nothing and create
// nothing.

// PrepareRead implements driver.ReadPreparer: it detects the deployment
// and starts a server-time estimator that samples with hello, once,
// unless Prepare already started its own. It writes nothing.
func (s *Store) PrepareRead(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.est.Load() != nil || s.readEst.Load() != nil {
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
	if s.est.Load() != nil || s.readEst.Load() != nil {
		return nil
	}
	if err := s.probeLocked(ctx); err != nil {
		return err
	}
	opts := append([]clockcheck.Option{
		clockcheck.WithClock(s.cfg.clock), clockcheck.WithLogger(s.cfg.logger),
		clockcheck.WithMemberSkew(s.memberSkew(s.topo)),
	}, s.cfg.estimator...)
	e, err := clockcheck.NewEstimator(ctx, s.db, opts...)
	if err != nil {
		return fmt.Errorf("dsyncmongo: measuring the server's clock: %w", err)
	}
	s.readEst.Store(e)
	return nil
}

// retireReadEstimatorLocked stops the reads' estimator once Prepare's exists
// (ServerTime prefers Prepare's); s.sem is held.
func (s *Store) retireReadEstimatorLocked() {
	if e := s.readEst.Swap(nil); e != nil {
		_ = e.Close()
	}
}

// ServerNowRead is ServerNow for readers: the interval the server's
// current time lies in, from the estimate the store judges expiry with
// if a call has prepared the store for writes, else from one that samples
// with hello (PrepareRead), which writes nothing. Package leadermongo
// reads its member documents' ages with it, so that listing members (dsync
// status, the status page) needs only the read role.
func (s *Store) ServerNowRead(ctx context.Context) (clockcheck.Interval, error) {
	if err := s.PrepareRead(ctx); err != nil {
		return clockcheck.Interval{}, err
	}
	e := s.est.Load()
	if e == nil {
		e = s.readEst.Load()
	}
	if e == nil { // Close retired the reads' estimator meanwhile
		return clockcheck.Interval{}, ErrClosed
	}
	return e.Now(), nil
}
