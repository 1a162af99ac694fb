package dsync_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestRevokeChecksOfAWaitingSession: a session that only waits reads its
// revocation every two TTLs (5 reads over 10 TTLs, give or take one at
// each end; every two thirds of a TTL, 15, before); once it holds, a
// check is due at once if the last one began more than two thirds of a
// TTL before (one read at the grant), and then every two thirds of a
// TTL (15 reads over 10 TTLs).
func TestRevokeChecksOfAWaitingSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		mem := memory.New()
		seen := seeSessions(mem, 0, 0)
		a := newMutex(t, newClient(t, mem, dsync.ClientWithTTL(ttl)), "k")
		b := newMutex(t, newClient(t, seen, dsync.ClientWithTTL(ttl)), "k")
		a.Lock()
		locked := make(chan struct{})
		go func() {
			b.Lock()
			close(locked)
		}()
		synctest.Wait()
		_, c0 := seen.counts()
		time.Sleep(10 * ttl)
		synctest.Wait()
		_, c1 := seen.counts()
		t.Logf("over 10 TTLs of waiting: %d revocation reads", c1-c0)
		if n := c1 - c0; n < 4 || n > 6 {
			t.Errorf("%d revocation reads over 10 TTLs of waiting; want 5 (one per two TTLs)", n)
		}
		// The last read began at the end of those 10 TTLs (they are a
		// multiple of the period): a TTL and a half renew interval on
		// (between two renewals, whose wake-ups of the keeper's loop
		// would otherwise start the check), more than two thirds of a
		// TTL old, and none due yet while the session only waits.
		time.Sleep(ttl + ttl/6)
		synctest.Wait()
		_, c2 := seen.counts()
		if c2 != c1 {
			t.Errorf("%d revocation reads within 3.5 s of the last; want none while the session only waits", c2-c1)
		}
		a.Unlock()
		<-locked
		synctest.Wait()
		_, c3 := seen.counts()
		if c3-c2 != 1 {
			t.Errorf("%d revocation reads at the grant, 3.5 s after the last; want 1", c3-c2)
		}
		time.Sleep(10 * ttl)
		synctest.Wait()
		_, c4 := seen.counts()
		t.Logf("over 10 TTLs of holding: %d revocation reads", c4-c3)
		if n := c4 - c3; n < 14 || n > 16 {
			t.Errorf("%d revocation reads over 10 TTLs of holding; want 15 (one per two thirds of a TTL)", n)
		}
		b.Unlock()
	})
}

// TestRevokeJustBeforeTheGrantIsSeenWithinARead: a session revoked while
// it waits, and granted a hold before it read its revocation, loses the
// hold within a read of the grant (reads take 500 ms here), when its
// last check began more than two thirds of a TTL before the grant; the
// read goes beside the grant, not before it: Lock returns at once.
func TestRevokeJustBeforeTheGrantIsSeenWithinARead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			ttl       = 3 * time.Second
			readTakes = 500 * time.Millisecond
		)
		mem := memory.New()
		store := seeSessions(mem, 0, readTakes)
		a := newMutex(t, newClient(t, mem, dsync.ClientWithTTL(ttl)), "k")
		b := newMutex(t, newClient(t, store, dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(slog.New(slog.DiscardHandler))), "k")
		a.Lock()
		heldAt := make(chan time.Time, 1)
		go func() {
			b.Lock()
			heldAt <- time.Now()
		}()
		synctest.Wait()
		// A TTL and a half renew interval of waiting (the grant comes
		// between two renewals, whose wake-ups of the keeper's loop would
		// otherwise start the check): its session was opened that long
		// ago, and read nothing since (its first check is due two TTLs
		// after the open).
		time.Sleep(ttl + ttl/6)
		store.mu.Lock()
		id := store.ids[0]
		store.mu.Unlock()
		if err := mem.Roles().Revocations.Revoke(context.Background(), driver.Revocation{Session: id, By: "test", Reason: "r"}); err != nil {
			t.Fatal(err)
		}
		unlockedAt := time.Now()
		a.Unlock()
		at := <-heldAt
		if d := at.Sub(unlockedAt); d >= readTakes {
			t.Errorf("Lock returned %v after the Unlock before it; want at once, the revoke check beside the grant", d)
		}
		select {
		case <-b.Lost():
		case <-time.After(2 * ttl):
			t.Fatalf("Lost still open %v after the grant", time.Since(at))
		}
		if d := time.Since(at); d > readTakes {
			t.Errorf("Lost closed %v after the grant; want within a read (%v)", d, readTakes)
		}
		_ = b.UnlockContext(context.Background())
	})
}
