package dsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// A LockContext whose context ends while its claim's insert is in flight
// withdraws the claim before it returns, though the insert failed because
// the context ended, when the store answers: the insert may still land
// (here it does, as the store answers again), and until the withdrawal
// lands, every process queued behind the claim waits for one that never
// holds. Before, the withdrawal was sent on the ended context, failed at
// once, and was left to a background resend that nothing started while
// the process held nothing: another process's Lock waited the whole TTL
// (15 s), until the session of the claim expired.
func TestLockCancelledInFlightWithdraws(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := twoProcesses(t)
		ma, err := dsync.NewMutex(a.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		mb, err := dsync.NewMutex(b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		// A first hold opens a's session, so that the Lock below gets as
		// far as inserting its claim.
		ma.Lock()
		ma.Unlock()

		a.SetAnswering(false)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ma.LockContext(ctx) }()
		synctest.Wait() // the claim's insert waits for the store
		cancel()
		synctest.Wait()
		a.SetAnswering(true) // the claim lands now
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("LockContext: %v, want context.Canceled", err)
		}
		if q, err := b.Queue(context.Background(), "k"); err != nil || len(q) != 0 {
			t.Errorf("when LockContext returned, the key's queue held %d claims (%v), want none: the claim was not withdrawn", len(q), err)
		}
		start := time.Now()
		mb.Lock()
		took := time.Since(start)
		mb.Unlock()
		t.Logf("another process held %v after the cancelled LockContext returned", took)
		if took >= dsync.DefaultTTL {
			t.Errorf("another process held %v after the cancelled LockContext returned: the claim kept it waiting until its session expired", took)
		}
	})
}

// When that withdrawal cannot be sent (the store was unreachable when
// the context ended), it is sent again in the background, as LockContext
// promises, though the process holds nothing and renews no session: the
// claim that landed keeps another process waiting only until the store
// is reachable again, not until the claim's session expires.
func TestLockCancelledInFlightWithdrawnLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := twoProcesses(t)
		ma, err := dsync.NewMutex(a.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		mb, err := dsync.NewMutex(b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		ma.Lock()
		ma.Unlock()

		a.SetAnswering(false)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ma.LockContext(ctx) }()
		synctest.Wait() // the claim's insert waits for the store
		a.SetReachable(false)
		start := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("LockContext: %v, want context.Canceled", err)
		}
		t.Logf("LockContext returned %v after its context ended", time.Since(start))
		a.SetReachable(true)
		a.SetAnswering(true) // the claim lands now; its withdrawal did not
		start = time.Now()
		mb.Lock()
		took := time.Since(start)
		mb.Unlock()
		t.Logf("another process held %v after the store was back", took)
		if took >= dsync.DefaultTTL {
			t.Errorf("another process held %v after the store was back: the claim kept it waiting until its session expired", took)
		}
	})
}

// On a store that does not answer, a LockContext whose context ends while
// its claim's insert is in flight returns once its withdrawal's bound
// passes.
func TestLockCancelledInFlightReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := dsync.NewMemClient()
		defer a.Close()
		ma, err := dsync.NewMutex(a.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		ma.Lock()
		ma.Unlock()
		a.SetAnswering(false)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ma.LockContext(ctx) }()
		synctest.Wait()
		start := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("LockContext: %v, want context.Canceled", err)
		}
		took := time.Since(start)
		t.Logf("LockContext returned %v after its context ended", took)
		if took > dsync.DefaultReleaseTimeout {
			t.Errorf("LockContext returned %v after its context ended, want within %v", took, dsync.DefaultReleaseTimeout)
		}
		a.SetAnswering(true)
	})
}
