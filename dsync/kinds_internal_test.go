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
