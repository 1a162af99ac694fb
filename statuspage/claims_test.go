package statuspage_test

import (
	"github.com/go-dsync/dsync/leader/operator"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// The Reader's KeyOrder is the driver's by number (ListOrder converts,
// String asks the driver's): each of its orders must have the driver's
// number.
func TestKeyOrdersMatchTheDriver(t *testing.T) {
	for _, c := range []struct {
		page   statuspage.KeyOrder
		driver driver.KeyOrder
	}{{statuspage.OrderBytes, driver.OrderBytes}, {statuspage.OrderFirstUse, driver.OrderFirstUse}} {
		if int(c.page) != int(c.driver) || c.page.String() != c.driver.String() {
			t.Errorf("KeyOrder %d (%q) is not the driver's %d (%q)", c.page, c.page, c.driver, c.driver)
		}
	}
}

// The Reader's Mode is the driver's by number (String asks the
// driver's).
func TestModesMatchTheDriver(t *testing.T) {
	for _, c := range []struct {
		page   statuspage.Mode
		driver driver.Mode
	}{{statuspage.ModeExclusive, driver.Exclusive}, {statuspage.ModeShared, driver.Shared}, {statuspage.ModeWeighted, driver.Weighted}} {
		if int(c.page) != int(c.driver) || c.page.String() != c.driver.String() {
			t.Errorf("Mode %d (%q) is not the driver's %d (%q)", c.page, c.page, c.driver, c.driver)
		}
	}
}

// NamespacedKey is the key a Mutex made with dsync.WithNamespace claims,
// as the Reader reads it, and an election's lease key is
// NamespacedKey(operator.Namespace, name).
func TestNamespacedKeyIsTheStoredKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClient(t, memory.New().Process())
		m, err := dsync.NewMutex(c, "jobs", dsync.WithNamespace("team"))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LockContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer m.Unlock()
		key := statuspage.NamespacedKey("team", "jobs")
		q, err := statuspage.NewReader(c).Queue(t.Context(), key)
		if err != nil || len(q) != 1 || q[0].Key != key || !q[0].Holds || q[0].Token != m.Token() {
			t.Errorf("Queue(%q) = %+v, %v; want the Mutex's hold", key, q, err)
		}
		if got := operator.LockKey("b"); got != statuspage.NamespacedKey(operator.Namespace, "b") {
			t.Errorf("operator.LockKey(b) = %q; want NamespacedKey(operator.Namespace, b)", got)
		}
	})
}
