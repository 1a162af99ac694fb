package lockset_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// order records who held, in order.
type order struct {
	mu   sync.Mutex
	seen []string
}

func (o *order) held(who string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, who)
}

func (o *order) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

// lockIn starts lock in a goroutine that records who once it holds, and
// waits until every goroutine is blocked (queued, or holding). The
// returned channel says whether it held, within a minute.
func lockIn(t *testing.T, o *order, who string, lock func(context.Context) error) chan bool {
	done := make(chan bool, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := lock(ctx); err != nil {
			t.Errorf("%s: %v", who, err)
			done <- false
			return
		}
		o.held(who)
		done <- true
	}()
	synctest.Wait()
	return done
}

// unlockOnce unlocks with unlock if held says it held.
func unlockOnce(held chan bool, unlock func()) {
	if <-held {
		unlock()
	}
}

// Fairness with single lockers, as lockset's doc states it: at a key, a
// Set's claim is a FIFO waiter like a single locker's, so a single that
// queues behind it holds after it; and a Set queues at a key only once it
// holds the keys before it, so a single that queued there meanwhile holds
// first.
func TestFIFOWithSingleLockers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b, c := client(t, store), client(t, store), client(t, store)
		f0, f1 := mutex(t, b, "f0"), mutex(t, b, "f1")
		s := newSet(t, a, lockset.Mutex(mutex(t, a, "f1")), lockset.Mutex(mutex(t, a, "f0")))
		var o order

		f0.Lock() // the Set waits at f0, holding nothing
		set := lockIn(t, &o, "set", s.LockContext)
		after := mutex(t, c, "f0") // queues at f0 behind the Set
		afterDone := lockIn(t, &o, "single f0 (after the set)", after.LockContext)
		f1.Lock()
		before := mutex(t, c, "f1") // queues at f1 before the Set reaches it
		beforeDone := lockIn(t, &o, "single f1 (before the set)", before.LockContext)

		f0.Unlock() // the Set holds f0, and queues at f1 behind "before"
		synctest.Wait()
		f1.Unlock()
		unlockOnce(beforeDone, before.Unlock)
		synctest.Wait()
		unlockOnce(set, s.Unlock)
		unlockOnce(afterDone, after.Unlock)
		want := []string{"single f1 (before the set)", "set", "single f0 (after the set)"}
		if got := o.get(); !slices.Equal(got, want) {
			t.Errorf("held in the order %q, want %q", got, want)
		}
	})
}

// A single locker of one of a Set's keys, unlocked often, does not starve
// a Set waiting for it: the Set's claim keeps its place in the key's queue.
func TestSetNotStarvedBySingles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a, b := client(t, store), client(t, store)
		s := newSet(t, a, lockset.Mutex(mutex(t, a, "g0")), lockset.Mutex(mutex(t, a, "g1")))
		singles := []*dsync.Mutex{mutex(t, b, "g1"), mutex(t, b, "g1")}
		singles[0].Lock()
		var o order
		set := lockIn(t, &o, "set", s.LockContext)
		next := lockIn(t, &o, "single", singles[1].LockContext)
		singles[0].Unlock()
		unlockOnce(set, s.Unlock)
		unlockOnce(next, singles[1].Unlock)
		if got := o.get(); !slices.Equal(got, []string{"set", "single"}) {
			t.Errorf("held in the order %q, want the Set first", got)
		}
	})
}
