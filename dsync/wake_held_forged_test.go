package dsync

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestForgedHeldExpiryIsCapped: a Held hint whose expiry is an hour on
// (forged by one who read the hint key from the store) reaches a waiter
// whose claim's owner has lost the store, and whose true Held hints
// keep coming, carrying its last confirmed expiry: the waiter still
// reads the owner's session at most a TTL after the forged hint came,
// finds it expired, and holds then, not an hour on; never before the
// session's expiry.
func TestForgedHeldExpiryIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu       sync.Mutex
			forge    bool
			forgedAt time.Time
		)
		store := memory.New()
		net := &hintNet{alter: func(e *driver.Event) {
			mu.Lock()
			defer mu.Unlock()
			if forge && e.Kind == driver.Held {
				forgedAt = store.ServerTime().Earliest
				e.Until = forgedAt.Add(time.Hour)
				forge = false
			}
		}}
		a := NewMemClientOn(store, net.member())
		b := NewMemClientOn(store, net.member())
		t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
		_, locked := queueBehind(t, a, b, time.Minute)
		a.SetReachable(false)
		info, ok := b.Holder("k")
		if !ok {
			t.Fatal("no holder")
		}
		expires := info.ExpiresAt
		mu.Lock()
		forge = true
		mu.Unlock()
		var heldAt time.Time
		select {
		case err := <-locked:
			if err != nil {
				t.Fatal(err)
			}
			heldAt = store.ServerTime().Earliest
		case <-time.After(4 * DefaultTTL):
			t.Fatalf("the waiter still waits %v after a Held hint told an expiry an hour on (its owner's session expired at %v)", 4*DefaultTTL, expires)
		}
		mu.Lock()
		forged := forgedAt
		mu.Unlock()
		if forged.IsZero() {
			t.Fatal("no Held hint was forged: not the case tested")
		}
		t.Logf("held %v after the session's expiry, %v after the forged hint", heldAt.Sub(expires), heldAt.Sub(forged))
		if heldAt.Before(expires) {
			t.Errorf("the waiter held at %v, before its owner's session expired at %v", heldAt, expires)
		}
		if d := heldAt.Sub(forged); d > DefaultTTL+time.Second {
			t.Errorf("the waiter held %v after the forged Held hint; want within a TTL, the poll interval and a read", d)
		}
	})
}
