package dsync

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestHeldSparesTheWaiterNextInLine: a waiter that became next in line
// (the claim ahead of the one it waits for ended, so the end it waits for
// is the next to come) looks again on other events about its key, in
// case that end was lost; but not on the Held hints that the owner of
// the claim it waits for sends every half poll interval, which say that
// the claim has not ended: each cost it a read, once per nextLookEvery,
// for as long as the claim was held.
func TestHeldSparesTheWaiterNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net, rc := &hintNet{}, &readCounter{}
		store := memory.New()
		a := NewMemClientOn(store, net.member())
		b := NewMemClientOn(store, net.member())
		c := NewMemClientOn(store, net.member(), countingReads(rc))
		t.Cleanup(func() { _ = c.Close(); _ = b.Close(); _ = a.Close() })
		mutex := func(cl *MemClient) *Mutex {
			m, err := NewMutex(cl.Client, "k")
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		first, second, third := mutex(a), mutex(b), mutex(c)
		if err := first.LockContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		// b waits behind a, then c behind b.
		bHeld, cHeld := make(chan error, 1), make(chan error, 1)
		go func() { bHeld <- second.LockContext(t.Context()) }()
		time.Sleep(time.Second)
		synctest.Wait()
		go func() { cHeld <- third.LockContext(t.Context()) }()
		time.Sleep(time.Second) // c queues, announces itself, hears Held
		synctest.Wait()

		first.Unlock()
		if err := <-bHeld; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		// b holds, c is next in line; b's Held hints go on coming.
		before := rc.reads.Load()
		time.Sleep(5 * time.Second)
		if n := rc.reads.Load() - before; n > 0 {
			t.Errorf("c, next in line, read the store %d times in 5 s while b held and its Held hints came, want none", n)
		}
		second.Unlock()
		if err := <-cHeld; err != nil {
			t.Fatal(err)
		}
		third.Unlock()
	})
}
