package dsync

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// TestFailedJoinCountsItsWaiterOnce: a claim that came to hold but whose
// hold could not start (its key's coverage ends before the session's
// deadline: errNotStarted) is withdrawn, and its waiter leaves the
// keeper once. Its failed join must count nothing, or leave counts it off
// a second time: another waiter of the session goes uncounted, the
// renewal goroutine finds the session idle, stops its deadline timer and
// exits, and that waiter's hold then starts in a session that nobody
// renews and no timer ends: its deadline passes and Lost() never closes
// (apisim seed 624: a semaphore hold of p2, deadline 15.571, Lost() never
// closed, no renewal sent after 14.146).
func TestFailedJoinCountsItsWaiterOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 2 * time.Second
		store := memory.New()
		holder := NewMemClientOn(store, ClientWithTTL(ttl))
		defer holder.Close()
		c := NewMemClientOn(store, ClientWithTTL(ttl))
		defer c.Close()
		ctx := context.Background()

		hm, err := NewMutex(holder.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := hm.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		// A waiter of c's session: m queues behind the holder.
		m, err := NewMutex(c.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		locked := make(chan error, 1)
		go func() { locked <- m.LockContext(ctx) }()
		synctest.Wait()

		// Another claim of the same session, as acquireLoop makes it: it
		// enters, its hold cannot start (no coverage of its key), and it
		// leaves.
		k := c.keeper
		s, err := k.Enter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if k.Join(&hold{claim: queue.Ref{Key: "never-covered"}, lost: make(chan struct{})}, s) {
			t.Fatal("a hold of a key with no coverage started")
		}
		k.Leave(s)
		synctest.Wait()

		// The waiter gets its hold once the holder unlocks.
		if err := hm.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-locked; err != nil {
			t.Fatal(err)
		}
		// Watched as a holder watches it: Lost is taken once (a later call
		// of Lost looks at the deadline itself, which the keeper's timer
		// must not rely on). Three TTLs later the hold is still renewed,
		// its store being reachable, or, at worst, lost; never past its
		// deadline with Lost open.
		lost := m.Lost()
		time.Sleep(3 * ttl)
		until := m.ValidUntil()
		select {
		case <-lost:
			t.Fatal("the hold was lost while its store was reachable")
		default:
		}
		if !time.Now().Before(until) {
			t.Fatalf("the hold's deadline %v passed %v ago and Lost() is open: its session is neither renewed nor ended",
				until, time.Since(until))
		}
	})
}
