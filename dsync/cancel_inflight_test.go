package dsync_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
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
		ma := newMutex(t, a.Client, "k")
		mb := newMutex(t, b.Client, "k")
		cancel, done := lockInFlight(a, ma)
		cancel()
		synctest.Wait()
		a.SetAnswering(true) // the claim lands now
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("LockContext: %v, want context.Canceled", err)
		}
		if q, err := statuspage.NewReader(b.Client).Queue(context.Background(), "k"); err != nil || len(q) != 0 {
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
		ma := newMutex(t, a.Client, "k")
		mb := newMutex(t, b.Client, "k")
		cancel, done := lockInFlight(a, ma)
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
		ma := newMutex(t, a.Client, "k")
		cancel, done := lockInFlight(a, ma)
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

// lockInFlight starts m.LockContext with a's store not answering, once
// a first hold opened a's session (so that the Lock gets as far as
// inserting its claim), and returns when the claim's insert waits for
// the store: the LockContext's cancel, and where it returns. Inside a
// synctest bubble.
func lockInFlight(a *dsync.MemClient, m *dsync.Mutex) (context.CancelFunc, <-chan error) {
	lockUnlock(m)
	a.SetAnswering(false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.LockContext(ctx) }()
	synctest.Wait() // the claim's insert waits for the store
	return cancel, done
}

// heldWithdrawals is a process's store whose withdrawals wait, once
// armed, until the test lets them go (or their context ends).
type heldWithdrawals struct {
	*memory.Process
	armed atomic.Bool
	gate  chan struct{}
}

func (s *heldWithdrawals) Insert(ctx context.Context, d driver.Doc) error {
	if s.armed.Load() && d.Kind == driver.KindWithdraw {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return s.Process.Insert(ctx, d)
}

// A process that is already waiting behind a claim of a cancelled
// LockContext, which landed late, is woken when that claim's withdrawal
// lands: the end is announced, as every other end of a waited-for claim
// is. A withdrawal the engine landed itself (abandon) was not announced,
// and the waiter slept until its safety poll or the claim's session
// expiry (13.3 s after the withdrawal landed; found by a review).
func TestCancelledInFlightWithdrawalWakesTheWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		ws := &heldWithdrawals{Process: store.Process(), gate: make(chan struct{})}
		ca, err := dsync.NewClient(ws, dsync.ClientWithPollInterval(100*time.Millisecond),
			dsync.ClientWithLogger(slog.New(slog.DiscardHandler)), dsync.ClientWithIdleAge(0))
		if err != nil {
			t.Fatal(err)
		}
		b := dsync.NewMemClientOn(store)
		defer ca.Close()
		defer b.Close()
		ma := newMutex(t, ca, "k")
		mb := newMutex(t, b.Client, "k")
		lockUnlock(ma)

		ws.armed.Store(true)
		ws.SetAnswering(false)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ma.LockContext(ctx) }()
		synctest.Wait() // a's claim's insert waits for the store
		cancel()
		synctest.Wait()       // the insert gave up; its withdrawal waits at the gate
		ws.SetAnswering(true) // a's claim lands now, its withdrawal not yet
		held := make(chan time.Time, 1)
		go func() {
			mb.Lock()
			held <- time.Now()
			mb.Unlock()
		}()
		synctest.Wait() // b queued behind a's claim, and waits
		if q, _ := statuspage.NewReader(b.Client).Queue(context.Background(), "k"); len(q) != 2 {
			t.Fatalf("queue %v, want a's claim and b's", q)
		}
		// The store is slow: the withdrawal lands 1.7 s later, within
		// abandon's bound, when b looks again only at its safety poll.
		time.Sleep(1700 * time.Millisecond)
		start := time.Now()
		close(ws.gate) // a's withdrawal lands
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("LockContext: %v", err)
		}
		took := (<-held).Sub(start)
		t.Logf("b held %v after a's withdrawal landed", took)
		if took >= time.Second {
			t.Errorf("b held %v after a's withdrawal landed: the withdrawal was not announced to the waiter", took)
		}
	})
}

// ClientWithReleaseTimeout bounds how long a cancelled LockContext waits for
// its withdrawal, whether its claim landed (the wait phase) or its insert
// had no reply yet (a review found the engine's own 2 s bound there).
func TestCancelledInFlightHonoursReleaseTimeout(t *testing.T) {
	for _, phase := range []string{"waiting", "inserting"} {
		t.Run(phase, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const bound = 100 * time.Millisecond
				a, b := twoProcesses(t, dsync.ClientWithReleaseTimeout(bound))
				ma := newMutex(t, a.Client, "k")
				mb := newMutex(t, b.Client, "k")
				lockUnlock(ma)
				if phase == "waiting" {
					mb.Lock() // a's claim lands and waits behind b's hold
					defer mb.Unlock()
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				if phase == "inserting" {
					a.SetAnswering(false)
				}
				go func() { done <- ma.LockContext(ctx) }()
				synctest.Wait()
				if phase == "waiting" {
					a.SetAnswering(false)
				}
				start := time.Now()
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("LockContext: %v", err)
				}
				took := time.Since(start)
				t.Logf("LockContext returned %v after its context ended", took)
				if took > bound {
					t.Errorf("LockContext returned %v after its context ended, want within ClientWithReleaseTimeout(%v)", took, bound)
				}
				a.SetAnswering(true)
			})
		})
	}
}
