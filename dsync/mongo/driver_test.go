package dsyncmongo

import (
	"testing"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/drivertest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestDriverConformance runs the driver conformance suite against the
// Store, each subtest on a fresh database; a peer is the Store of
// another Client (another process) on the same database, through a client
// of its own. The Backends close their stores.
func TestDriverConformance(t *testing.T) {
	t.Parallel()
	drivertest.Run(t, func(t *testing.T) driver.Store {
		s := newBackend(t, mongotest.NewDatabase(t), dsync.ClientWithWakeups(true)).s
		s.cfg.tests().readRuns = true // check the find it would send on MongoDB
		return s
	}, drivertest.Peer(func(t *testing.T, first driver.Store) driver.Store {
		return newBackend(t, mongotest.SameDatabase(t, first.(*Store).db), dsync.ClientWithWakeups(true)).s
	}))
}
