package dsync

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// callCounter is a store that counts every request a process sends it
// (of its roles too), by method, but Prepare: a store prepared once (such
// as MongoDB's) sends nothing for it again.
type callCounter struct {
	*memory.Store
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) count(_ context.Context, call memory.Call, _ func() error) error {
	if call.Op == "Prepare" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = make(map[string]int)
	}
	op := call.Op
	if op == "RenewSessionUp" { // a renewal with the record of up-time (the default grace)
		op = "RenewSession"
	}
	c.calls[op]++
	return nil
}

// snapshot returns the counts so far.
func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// countingCalls makes the Client send its requests through cc.
func countingCalls(cc *callCounter) ClientOption {
	return func(c *clientConfig) error {
		c.test.wrapStore = func(s driver.Store) driver.Store { cc.Store = s.(*memory.Process).Intercept(cc.count); return cc }
		return nil
	}
}

// idleWaiterCalls counts, by kind, what a waiter in a process that hints
// reach (over net) sends the store over window, after waiting a minute
// behind a holder of another process that keeps its hold (both at the
// default TTL of 15 s), and returns the counts.
func idleWaiterCalls(t *testing.T, net *hintNet, window time.Duration) map[string]int {
	t.Helper()
	cc := &callCounter{}
	store := memory.New()
	a := NewMemClientOn(store, net.member())
	b := NewMemClientOn(store, net.member(), countingCalls(cc))
	t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
	owner, locked := queueBehind(t, a, b, time.Minute)
	before := cc.snapshot()
	time.Sleep(window)
	synctest.Wait()
	after := cc.snapshot()
	owner.Unlock()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	d := make(map[string]int)
	for k, n := range after {
		if n -= before[k]; n != 0 {
			d[k] = n
		}
	}
	var total int
	for _, k := range slices.Sorted(maps.Keys(d)) {
		total += d[k]
		t.Logf("%-14s %4d  %.3f/s", k, d[k], float64(d[k])/window.Seconds())
	}
	t.Logf("%-14s %4d  %.3f/s", "all", total, float64(total)/window.Seconds())
	return d
}

// TestIdleWaiterCost measures, by kind, what an idle waiter sends the
// store over 10 minutes at the default TTL of 15 s while hints reach it
// and its claim's owner keeps sending Held hints: its renewals (one per
// 5 s, 120), its revoke checks (one per two TTLs while it only waits,
// 20; 60 before, one per two thirds of a TTL) and nothing else: the
// Held hints carry the holder's session's confirmed expiry, so it never
// reads that session (40 reads before, one per TTL). An owner that tells
// no expiry (an older release) costs it those reads again, and nothing
// more. The figures docs/operations.md states.
func TestIdleWaiterCost(t *testing.T) {
	const window = 10 * time.Minute
	near := func(got, want int) bool { return got >= want-1 && got <= want+1 }
	t.Run("HeldTellsTheExpiry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			d := idleWaiterCalls(t, &hintNet{}, window)
			if !near(d["RenewSession"], 120) || !near(d["Revoked"], 20) || len(d) != 2 {
				t.Errorf("the idle waiter sent %v in 10 minutes; want 120 renewals and 20 revoke checks, give or take one, and nothing else", d)
			}
		})
	})
	t.Run("OwnerTellsNoExpiry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			net := &hintNet{alter: func(e *driver.Event) {
				if e.Kind == driver.Held {
					e.Until = time.Time{}
				}
			}}
			d := idleWaiterCalls(t, net, window)
			if !near(d["RenewSession"], 120) || !near(d["Revoked"], 20) || !near(d["GetSession"], 40) || len(d) != 3 {
				t.Errorf("the idle waiter sent %v in 10 minutes; want 120 renewals, 20 revoke checks and 40 reads of the holder's session, give or take one, and nothing else", d)
			}
		})
	})
}

// TestHeldHintsOfAnOwnerCutOffFromTheStore: the owner of the claim a
// waiter waits for loses the store but not the waiter (its renewals
// fail; its Held hints keep coming, with the expiry its last confirmed
// renewal stored): the waiter reads the session once that expiry has
// passed, and holds then, within the poll interval and a read, never
// before it. An expiry the store did not confirm (a Held hint that told
// one a TTL ahead of each hint, say) would keep it waiting for as long
// as the hints came.
func TestHeldHintsOfAnOwnerCutOffFromTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu        sync.Mutex
			lastHeld  time.Time
			heldCount int
		)
		store := memory.New()
		net := &hintNet{alter: func(e *driver.Event) {
			if e.Kind == driver.Held {
				mu.Lock()
				lastHeld, heldCount = store.ServerTime().Earliest, heldCount+1
				mu.Unlock()
			}
		}}
		a := NewMemClientOn(store, net.member())
		b := NewMemClientOn(store, net.member())
		t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
		_, locked := queueBehind(t, a, b, time.Minute)
		a.SetReachable(false)
		// The expiry its last confirmed renewal stored: the session's,
		// as the store holds it from now on.
		info, ok := b.Holder("k")
		if !ok {
			t.Fatal("no holder")
		}
		expires := info.ExpiresAt
		var heldAt time.Time
		select {
		case err := <-locked:
			if err != nil {
				t.Fatal(err)
			}
			heldAt = store.ServerTime().Earliest
		case <-time.After(4 * DefaultTTL):
			t.Fatalf("the waiter still waits %v after its owner lost the store (its session expired at %v)", 4*DefaultTTL, expires)
		}
		mu.Lock()
		last, n := lastHeld, heldCount
		mu.Unlock()
		t.Logf("held %v after the session's expiry; %d Held hints, the last %v before", heldAt.Sub(expires), n, heldAt.Sub(last))
		if heldAt.Before(expires) {
			t.Errorf("the waiter held at %v, before its owner's session expired at %v", heldAt, expires)
		}
		if d := heldAt.Sub(expires); d > time.Second {
			t.Errorf("the waiter held %v after its owner's session expired; want within the poll interval and a read", d)
		}
		// NewMemClientOn polls every 100 ms: Held hints every 50 ms.
		if d := heldAt.Sub(last); d > 100*time.Millisecond {
			t.Errorf("the last Held hint came %v before the waiter held: not the case tested, Held hints all along", d)
		}
	})
}
