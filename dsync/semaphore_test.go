package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

func newSemaphore(t *testing.T, b *dsync.Client, key string, n int64, opts ...dsync.Option) *dsync.Semaphore {
	t.Helper()
	s, err := dsync.NewSemaphore(b, key, n, append([]dsync.Option{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func acquired(s *dsync.Semaphore, n int64) <-chan struct{} {
	return started(func() {
		if err := s.Acquire(context.Background(), n); err != nil {
			panic(err)
		}
	})
}

// logBuffer keeps what a logger writes, for goroutines to share.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A request that waits for room blocks the smaller ones queued after it
// (FIFO, as x/sync's semaphore); once room is made, both hold.
func TestSemaphoreFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newSemaphore(t, newClient(t, store), "k", 3)
		b := newSemaphore(t, newClient(t, store), "k", 3)
		c := newSemaphore(t, newClient(t, store), "k", 3)
		if err := a.Acquire(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		bDone := acquired(b, 2)
		synctest.Wait()
		cDone := acquired(c, 1)
		synctest.Wait()
		if returned(bDone) {
			t.Fatal("2 units held beside 2 under a limit of 3")
		}
		if returned(cDone) {
			t.Fatal("a small request passed a larger one that waits for room")
		}
		a.Release(2)
		<-bDone
		<-cDone
		if b.Held() != 2 || c.Held() != 1 || a.Held() != 0 {
			t.Fatalf("held: a %d, b %d, c %d", a.Held(), b.Held(), c.Held())
		}
		b.Release(2)
		c.Release(1)
	})
}

func TestSemaphoreRejectsBadInput(t *testing.T) {
	mem := dsync.NewMemClient()
	defer mem.Close()
	if _, err := dsync.NewSemaphore(mem.Client, "k", 0); err == nil {
		t.Fatal("NewSemaphore accepted a limit of 0")
	}
	s := newSemaphore(t, mem.Client, "k", 2)
	if err := s.Acquire(context.Background(), 3); !errors.Is(err, dsync.ErrOverLimit) {
		t.Fatalf("Acquire(3) of 2 = %v, want ErrOverLimit", err)
	}
	if err := s.Acquire(context.Background(), -1); err == nil || errors.Is(err, dsync.ErrOverLimit) {
		t.Fatalf("Acquire(-1) = %v, want an error", err)
	}
	if s.TryAcquire(-1) {
		t.Fatal("TryAcquire(-1) succeeded")
	}
	if s.TryAcquire(3) {
		t.Fatal("TryAcquire(3) of 2 succeeded")
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("stop")
	cancel(cause)
	if err := s.Acquire(ctx, 1); err != cause {
		t.Fatalf("Acquire on an ended context = %v, want its cause", err)
	}
}

// Zero units, as with x/sync's Weighted: Release(0) releases the empty
// set of acquisitions (which adds up to 0) and does not panic;
// Acquire(ctx, 0) and TryAcquire(0) acquire nothing and succeed at once,
// even while another process holds every unit, with no claim in the
// store; on an ended context Acquire(ctx, 0) returns its cause.
func TestSemaphoreZeroUnits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		c := newClient(t, store)
		full := newSemaphore(t, newClient(t, store), "k", 2)
		if err := full.Acquire(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		defer full.Release(2)
		s := newSemaphore(t, c, "k", 2)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Release(0) panicked: %v", r)
				}
			}()
			s.Release(0)
		}()
		if err := s.ReleaseContext(context.Background(), 0); err != nil {
			t.Fatalf("ReleaseContext(0) = %v, want nil", err)
		}
		if err := s.Acquire(context.Background(), 0); err != nil {
			t.Fatalf("Acquire(0) = %v, want nil", err)
		}
		if !s.TryAcquire(0) {
			t.Fatal("TryAcquire(0) failed")
		}
		if err := s.TryAcquireContext(context.Background(), 0); err != nil {
			t.Fatalf("TryAcquireContext(0) = %v, want nil", err)
		}
		if s.Held() != 0 || s.Token() != 0 {
			t.Fatalf("after acquiring 0 units: held %d, token %d; want nothing", s.Held(), s.Token())
		}
		if q, err := statuspage.NewReader(c).Queue(context.Background(), "dsync:sem/k"); err != nil || len(q) != 1 {
			t.Fatalf("the key's queue: %d claims (%v), want only the full holder's", len(q), err)
		}
		s.Release(0) // still nothing to release, and no panic
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("stop")
		cancel(cause)
		if err := s.Acquire(ctx, 0); err != cause {
			t.Fatalf("Acquire(0) on an ended context = %v, want its cause", err)
		}
		if err := s.TryAcquireContext(ctx, 0); err != cause {
			t.Fatalf("TryAcquireContext(0) on an ended context = %v, want its cause", err)
		}
	})
}

// TryAcquire holds only with room at once and nobody queued ahead.
func TestSemaphoreTryAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		a := newSemaphore(t, newClient(t, store), "k", 3)
		b := newSemaphore(t, newClient(t, store), "k", 3)
		if !a.TryAcquire(2) || !b.TryAcquire(1) {
			t.Fatal("TryAcquire fails with room")
		}
		if b.TryAcquire(1) {
			t.Fatal("TryAcquire holds past the limit")
		}
		a.Release(2)
		waiting := acquired(a, 3) // waits for b's unit
		synctest.Wait()
		if b.TryAcquire(1) {
			t.Fatal("TryAcquire passed a request waiting for room")
		}
		b.Release(1)
		<-waiting
		a.Release(3)
	})
}

// Release ends whole acquisitions: one of exactly n units if there is
// one, else the oldest that add up to n; anything else panics.
func TestSemaphoreRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := dsync.NewMemClient()
		defer mem.Close()
		s := newSemaphore(t, mem.Client, "k", 10)
		ctx := context.Background()
		var tokens []uint64
		for _, n := range []int64{1, 2, 3, 1} {
			if err := s.Acquire(ctx, n); err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, s.Token())
		}
		if s.Held() != 7 {
			t.Fatalf("held %d, want 7", s.Held())
		}
		s.Release(3) // the acquisition of 3
		if s.Held() != 4 || s.Token() != tokens[3] {
			t.Fatalf("after Release(3): held %d token %d", s.Held(), s.Token())
		}
		s.Release(4) // none of 4: the oldest that add up to it, 1 + 2 + 1
		if s.Held() != 0 {
			t.Fatalf("after Release(4): held %d", s.Held())
		}
		if err := s.Acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{1, 3} {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "released") {
						t.Errorf("Release(%d) of one acquisition of 2: recovered %v", n, r)
					}
				}()
				s.Release(n)
			}()
		}
		s.Release(2)
	})
}

// Units held by a process that stops renewing come back once its session
// has expired in the store, not before its holds are lost, and within
// 1.05 × TTL of the moment it stopped, as a Mutex's failover.
func TestSemaphoreUnitsOfADeadProcessComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		f := newFlaky(store)
		const ttl = time.Second
		// Without an outage grace the dead process's claim is judged by
		// its expiry; with one, by a stamp after it, which a store only
		// a TTL old may lack (TestCutAloneTakenOverAtExpiry is the
		// bound with a grace).
		dead := newSemaphore(t, newClient(t, f, dsync.ClientWithTTL(ttl), dsync.ClientWithOutageGrace(0)), "k", 2)
		live := newSemaphore(t, newClient(t, store, dsync.ClientWithTTL(ttl)), "k", 2)
		if err := dead.Acquire(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
		f.renewDown.Store(true) // from now on it cannot renew: as if dead
		start := time.Now()
		got := acquired(live, 1)
		var lostAt time.Time
		select {
		case <-dead.Lost():
			lostAt = time.Now()
		case <-got:
			t.Fatal("units came back before their holder's deadline")
		}
		<-got
		at := time.Since(start)
		if at < lostAt.Sub(start) || at > ttl*105/100 {
			t.Fatalf("units back after %v (holder lost after %v, TTL %v): want after the loss, within 1.05 × TTL", at, lostAt.Sub(start), ttl)
		}
		t.Logf("units back %v after the holder's last renewal could have been sent, %v after it was lost", at, at-lostAt.Sub(start))
		live.Release(1)
	})
}

// quietClient is newClient whose warnings go nowhere.
func quietClient(t *testing.T, store driver.Store) *dsync.Client {
	t.Helper()
	c, err := dsync.NewClient(store, dsync.ClientWithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Semaphores of one key that disagree on the limit take turns in queue
// order: the units held at once always belong to claims of one limit and
// fit it. So while they disagree, the claims of the larger limit may hold
// more than the smaller limit (as during a rolling restart that lowers
// it), but never beside a claim of the other limit.
func TestSemaphoreLimitsTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		small := newSemaphore(t, newClient(t, store), "k", 2)
		var logged logBuffer
		warned := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
		bigClient, err := dsync.NewClient(store, dsync.ClientWithLogger(warned))
		if err != nil {
			t.Fatal(err)
		}
		defer bigClient.Close()
		big := newSemaphore(t, bigClient, "k", 5)
		bigToo := newSemaphore(t, quietClient(t, store), "k", 5)
		later := newSemaphore(t, quietClient(t, store), "k", 2)
		if err := small.Acquire(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		bigDone := acquired(big, 3)
		synctest.Wait()
		bigTooDone := acquired(bigToo, 2)
		synctest.Wait()
		laterDone := acquired(later, 1)
		synctest.Wait()
		if returned(bigDone) || returned(bigTooDone) {
			t.Fatal("units of limit 5 held beside 1 of limit 2")
		}
		if got := logged.String(); strings.Count(got, "semaphore limits differ") != 1 || !strings.Contains(got, "limit=5 other=2") {
			t.Errorf("the waiter of limit 5 behind one of limit 2 logged %q; want one warning naming both limits", got)
		}
		if returned(laterDone) {
			t.Fatal("a claim of limit 2 passed claims of limit 5 queued before it")
		}
		small.Release(1)
		// The claims of limit 5 hold together: 5 units at once, more than
		// the smaller limit, while the claim of limit 2 waits.
		<-bigDone
		<-bigTooDone
		synctest.Wait()
		if returned(laterDone) {
			t.Fatal("a claim of limit 2 holds beside 5 units of limit 5")
		}
		big.Release(3)
		synctest.Wait()
		if returned(laterDone) {
			t.Fatal("a claim of limit 2 holds beside 2 units of limit 5")
		}
		bigToo.Release(2)
		<-laterDone
		later.Release(1)
	})
}

// Processes acquiring 1 or 2 units of 3 in a loop never hold more than 3
// at once, and do share.
func TestSemaphoreHammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		const limit = 3
		var (
			mu           sync.Mutex
			units, peak  int64
			holds, share int
		)
		var wg sync.WaitGroup
		for p := range 4 {
			s := newSemaphore(t, newClient(t, store, dsync.ClientWithTTL(time.Second)), "k", limit)
			for g := range 2 {
				wg.Go(func() {
					for i := range 20 {
						n := int64(1 + (p+g+i)%2)
						if err := s.Acquire(context.Background(), n); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						if units > 0 {
							share++
						}
						units += n
						peak = max(peak, units)
						holds++
						mu.Unlock()
						time.Sleep(time.Duration(1+i%3) * time.Millisecond)
						mu.Lock()
						units -= n
						mu.Unlock()
						s.Release(n)
					}
				})
			}
		}
		wg.Wait()
		if peak > limit {
			t.Fatalf("%d units held at once, limit %d", peak, limit)
		}
		if holds != 4*2*20 || share == 0 {
			t.Fatalf("%d holds, %d begun beside another", holds, share)
		}
	})
}

// A request waiting for room holds as soon as any acquisition below it
// ends and makes room, not only the lowest: here the higher of two
// acquisitions ends first.
func TestSemaphoreWaiterWakesOnAnyRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		low := newSemaphore(t, newClient(t, store), "k", 3)
		high := newSemaphore(t, newClient(t, store), "k", 3)
		waiter := newSemaphore(t, newClient(t, store), "k", 3)
		ctx := context.Background()
		if err := low.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := high.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		done := acquired(waiter, 2)
		time.Sleep(time.Second) // long past the first looks of its wait
		synctest.Wait()
		if returned(done) {
			t.Fatal("2 units held beside 2 under a limit of 3")
		}
		start := time.Now()
		high.Release(1)
		<-done
		if d := time.Since(start); d > 10*time.Millisecond {
			t.Fatalf("the waiter held %v after the release that made room", d)
		}
		waiter.Release(2)
		low.Release(1)
	})
}
