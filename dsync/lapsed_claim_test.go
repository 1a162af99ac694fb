package dsync_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestLockAfterAHoldLostToALapse: a hold lost because its key's segment
// lapsed, while its session lives on, ends its claim: another process
// then takes the key within a TTL or two. The session lives because its
// Client waits for another key, and the lapse comes from what the store
// lost: the store is restored from a backup taken just before that wait's
// claim, whose walk then finds the claim gone and forgets all it knew of
// every key, the held key's segment too. Before, the lost hold's claim
// stayed in the store for as long as its session lived, and every waiter
// of its key waited behind it (the public-API outage simulation found
// it: a reader waited five seconds behind a write hold lost to a lapse,
// its process renewing its session for other claims).
func TestLockAfterAHoldLostToALapse(t *testing.T) {
	const ttl = 3 * time.Second
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		store := memory.New()
		a := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl))
		defer a.Close()
		b := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl))
		defer b.Close()
		other := newMutex(t, b.Client, "other")
		if err := other.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		held := newMutex(t, a.Client, "held")
		if err := held.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		backup := store.Snapshot()
		waits := newMutex(t, a.Client, "other") // a's session lives on while it waits
		go func() { _ = waits.LockContext(ctx) }()
		synctest.Wait() // its claim is in the store, behind b's hold
		store.Restore(backup)

		select {
		case <-held.Lost():
		case <-time.After(10 * ttl):
			t.Fatal("the hold was not lost after the store forgot a claim of its Client: the test shows nothing")
		}
		if err := held.Err(); err == nil || !strings.Contains(err.Error(), "lapsed") {
			t.Fatalf("the hold was lost with %v; want its segment lapsed (the test shows nothing)", err)
		}
		from := time.Now()
		next := newMutex(t, b.Client, "held")
		lctx, lcancel := context.WithTimeout(ctx, 10*ttl)
		defer lcancel()
		if err := next.LockContext(lctx); err != nil {
			t.Fatalf("another process's Lock of the key of a hold lost to a lapse, its session alive: %v after %v; want it held within 2 TTLs",
				err, time.Since(from))
		}
		took := time.Since(from)
		if took > 2*ttl {
			t.Fatalf("another process's Lock took %v; want it within 2 TTLs (%v)", took, 2*ttl)
		}
		t.Logf("the key was taken %v after the lapse was told", took)
		if next.Token() <= held.Token() {
			t.Fatalf("token %d after the lost hold's %d; want it above", next.Token(), held.Token())
		}
		if err := held.UnlockContext(ctx); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("Unlock of the lost hold = %v; want ErrLost", err)
		}
	})
}
