package drivertest_test

import (
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/drivertest"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// testConformance is a driver's conformance test: in the driver's own
// _test.go it is named TestConformance, and go test runs it. Here the
// driver is dsync/driver/memory, whose one store every process shares,
// so a peer is the same store; a driver over a database opens a second
// connection to the same data.
func testConformance(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) driver.Store {
		s := memory.New() // fresh and empty
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, drivertest.Peer(func(_ *testing.T, first driver.Store) driver.Store {
		return first
	}))
}

// Run reports through the *testing.T of the driver's own test, which an
// Example has none of: this Example compiles but does not run.
// dsync/driver/memory's TestConformance runs the same code.
func Example() {
	_ = testConformance
}
