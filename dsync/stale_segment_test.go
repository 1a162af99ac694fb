package dsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestLockOnASegmentKnownBeforeAnEmptying: a process with buckets of five
// minutes locks and unlocks a key, and keeps what it knows of the key's
// segment (covered, by its count, for ten minutes more). The store is
// emptied while nothing is held; a process with buckets of a minute
// records its span, and locks and unlocks the key at the same store time,
// so its segment has the same number. The first process's next Lock
// joins the segment it knows without a start: it must not hold on it
// (its claim records the history before the emptying, the release below
// it the new one), and fails with ErrSpan instead, the store's span being
// another. Before, it held, relying on the coverage it knew, its
// refreshes inserting nothing; once the newcomer's coverage was over, a
// third process of the store's span started a segment and locked the key
// beside it (dsync/internal/queue:
// TestSegmentKnownBeforeAnEmptyingDoesNotHold).
func TestLockOnASegmentKnownBeforeAnEmptying(t *testing.T) {
	const ttl = 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := dsync.NewMemClientOn(store, dsync.ClientWithBucketSpan(5*time.Minute), dsync.ClientWithTTL(ttl))
		defer a.Close()
		ma := newMutex(t, a.Client, "job")
		ma.Lock()
		//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
		ma.Unlock()

		store.Reset() // an operator empties the collections: nothing is held
		b := dsync.NewMemClientOn(store, dsync.ClientWithBucketSpan(time.Minute), dsync.ClientWithTTL(ttl))
		defer b.Close()
		mb := newMutex(t, b.Client, "job")
		mb.Lock()
		//lint:ignore SA2001 a dsync lock taken and released at once: the test wants the hold, not a critical section
		mb.Unlock()

		// The first process's session ends unrenewed (it holds nothing):
		// its next Lock opens one in the emptied store.
		time.Sleep(3 * ttl)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		errA := ma.LockContext(ctx)
		if errors.Is(errA, dsync.ErrSpan) {
			return
		}
		if errA != nil {
			t.Fatalf("the first process's Lock after the emptying: %v, want dsync.ErrSpan", errA)
		}
		// It holds: a process of the store's span must not, while it does.
		for range 6 {
			time.Sleep(time.Minute)
			select {
			case <-ma.Lost():
				return
			default:
			}
			c := dsync.NewMemClientOn(store, dsync.ClientWithBucketSpan(time.Minute), dsync.ClientWithTTL(ttl))
			defer c.Close()
			mc := newMutex(t, c.Client, "job")
			if mc.TryLock() {
				select {
				case <-ma.Lost():
				default:
					t.Fatalf("both processes hold job (tokens %d and %d)", ma.Token(), mc.Token())
				}
				mc.Unlock()
			}
		}
		t.Fatalf("the first process's Lock after the emptying held (token %d), want dsync.ErrSpan", ma.Token())
	})
}
