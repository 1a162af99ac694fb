package memory_test

import (
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/drivertest"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestConformance runs the driver conformance suite. Every Client of a
// process shares one memory store, as processes share a database: a peer
// is the same store.
func TestConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) driver.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, drivertest.Peer(func(_ *testing.T, first driver.Store) driver.Store { return first }))
}
