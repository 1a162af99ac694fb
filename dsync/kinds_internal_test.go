package dsync

import (
	"testing"

	"github.com/go-dsync/dsync/dsync/driver"
)

// dsync's KeyOrder is the driver's by number (orderOf converts, String
// asks the driver's): each of its orders must have the driver's number.
func TestKeyOrdersMatchTheDriver(t *testing.T) {
	for _, c := range []struct {
		dsync  KeyOrder
		driver driver.KeyOrder
	}{{OrderBytes, driver.OrderBytes}, {OrderFirstUse, driver.OrderFirstUse}} {
		if got := orderOf(c.driver); got != c.dsync || got.String() != c.driver.String() {
			t.Errorf("orderOf(%v) = %v (%q), want %v", c.driver, got, got.String(), c.dsync)
		}
	}
}

// dsync's Mode is the driver's by number (String asks the driver's).
func TestModesMatchTheDriver(t *testing.T) {
	for _, c := range []struct {
		dsync  Mode
		driver driver.Mode
	}{{ModeExclusive, driver.Exclusive}, {ModeShared, driver.Shared}, {ModeWeighted, driver.Weighted}} {
		if int(c.dsync) != int(c.driver) || modeOf(c.driver) != c.dsync || c.dsync.String() != c.driver.String() {
			t.Errorf("Mode %d (%q) is not the driver's %d (%q)", c.dsync, c.dsync, c.driver, c.driver)
		}
	}
}
