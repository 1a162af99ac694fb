package dsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// Progress deadlines on an RWMutex and a Semaphore: progress is the
// value's, so a stall ends every hold of the value at once, and the
// waiter of another process holds once all their claims were released.

// stallPair is two processes on one store: a, whose value stalls, and
// b, whose waiter takes over.
func stallPair(t *testing.T) (a, b *dsync.MemClient) {
	t.Helper()
	store := memory.New()
	a = dsync.NewMemClientOn(store, dsync.ClientWithTTL(progressTTL))
	b = dsync.NewMemClientOn(store, dsync.ClientWithTTL(progressTTL))
	t.Cleanup(func() { _ = b.Close(); _ = a.Close() })
	return a, b
}

// checkTakeover fails t unless lost closed at last+d, and the waiter
// (which sends its hold's time on acquired) held the margin after that,
// within a handoff.
func checkTakeover(t *testing.T, lost <-chan struct{}, last time.Time, d time.Duration, acquired <-chan time.Time) {
	t.Helper()
	await(t, "Lost", lost)
	lostAt := time.Now()
	got := await(t, "the next waiter's hold", acquired)
	if lag := lostAt.Sub(last); lag < d || lag > d+time.Millisecond {
		t.Errorf("Lost closed %v after the last report; want the deadline, %v", lag, d)
	}
	margin := driver.Margin(progressTTL)
	if wait := got.Sub(lostAt); wait < margin || wait > margin+progressHandoff {
		t.Errorf("the next waiter held %v after Lost closed; want the margin %v, plus a handoff of at most %v", wait, margin, progressHandoff)
	}
}

// An RWMutex writer that stops reporting is stalled, and a reader of
// another process holds after the margin.
func TestStalledWriterReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		a, b := stallPair(t)
		rw, err := dsync.NewRWMutex(a.Client, "k", dsync.WithProgressDeadline(d))
		if err != nil {
			t.Fatal(err)
		}
		reader, err := dsync.NewRWMutex(b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		rw.Lock()
		acquired := make(chan time.Time, 1)
		go func() {
			reader.RLock()
			acquired <- time.Now()
		}()
		for range 4 {
			time.Sleep(d / 2)
			rw.Progress()
		}
		if err := rw.Err(); err != nil {
			t.Errorf("Err while reports come within the deadline: %v", err)
		}
		checkTakeover(t, rw.Lost(), time.Now(), d, acquired)
		wantStalled(t, "Err", rw.Err())
		wantStalled(t, "UnlockContext", rw.UnlockContext(context.Background()))
		wantStalled(t, "Err after the Unlock", rw.Err())
		reader.RUnlock()
	})
}

// Two read holds of one RWMutex value share its progress: one report
// keeps both, and when reports stop both are stalled at once. A writer
// of another process holds once both claims were released.
func TestStalledReadersReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		a, b := stallPair(t)
		rw, err := dsync.NewRWMutex(a.Client, "k", dsync.WithProgressDeadline(d))
		if err != nil {
			t.Fatal(err)
		}
		writer, err := dsync.NewRWMutex(b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		rw.RLock()
		time.Sleep(d / 2)
		rw.RLock()
		acquired := make(chan time.Time, 1)
		go func() {
			writer.Lock()
			acquired <- time.Now()
		}()
		for range 6 {
			time.Sleep(d / 2)
			rw.Progress()
		}
		checkTakeover(t, rw.Lost(), time.Now(), d, acquired)
		wantStalled(t, "Err", rw.Err())
		for i := range 2 {
			wantStalled(t, "RUnlockContext "+string(rune('1'+i)), rw.RUnlockContext(context.Background()))
		}
		wantStalled(t, "Err after the RUnlocks", rw.Err())
		writer.Unlock()
		rw.RLock()
		if err := rw.Err(); err != nil {
			t.Errorf("Err of the next read hold: %v", err)
		}
		rw.RUnlock()
	})
}

// A Semaphore's acquisitions share its progress: when reports stop, all
// are stalled, and an acquisition of another process that needs their
// units holds once they were released.
func TestStalledSemaphoreReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		a, b := stallPair(t)
		s, err := dsync.NewSemaphore(a.Client, "k", 2, dsync.WithProgressDeadline(d))
		if err != nil {
			t.Fatal(err)
		}
		other, err := dsync.NewSemaphore(b.Client, "k", 2)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for range 2 {
			if err := s.Acquire(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		acquired := make(chan time.Time, 1)
		go func() {
			if err := other.Acquire(ctx, 2); err != nil {
				t.Error(err)
			}
			acquired <- time.Now()
		}()
		for range 4 {
			time.Sleep(d / 2)
			s.Progress()
		}
		if err := s.Err(); err != nil {
			t.Errorf("Err while reports come within the deadline: %v", err)
		}
		checkTakeover(t, s.Lost(), time.Now(), d, acquired)
		wantStalled(t, "Err", s.Err())
		wantStalled(t, "ReleaseContext", s.ReleaseContext(ctx, 2))
		wantStalled(t, "Err after the Release", s.Err())
		other.Release(2)
	})
}

// A new hold of the value counts as a report: a Semaphore's second
// acquisition, made just before the first's deadline with no report,
// keeps both for another deadline.
func TestNewHoldCountsAsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = time.Second
		c := dsync.NewMemClient(dsync.ClientWithTTL(progressTTL))
		defer c.Close()
		s, err := dsync.NewSemaphore(c.Client, "k", 2, dsync.WithProgressDeadline(d))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := s.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d * 9 / 10)
		if err := s.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(d * 8 / 10) // past the first acquisition's deadline
		select {
		case <-s.Lost():
			t.Fatalf("stalled %v after a new acquisition: %v", d*8/10, s.Err())
		default:
		}
		await(t, "Lost", s.Lost()) // with no report from now on
		wantStalled(t, "Err", s.Err())
		wantStalled(t, "ReleaseContext", s.ReleaseContext(ctx, 2))
	})
}

// An RWMutex's read claim that lingers with no RLock holding it
// (WithReadLinger) is not watched: past the deadline with no report, an
// RLock still takes it again (its token), valid. Taken again, it is
// watched as any hold.
func TestLingeringReadClaimNotStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 200 * time.Millisecond
		c := dsync.NewMemClient(dsync.ClientWithTTL(progressTTL))
		defer c.Close()
		rw, err := dsync.NewRWMutex(c.Client, "k", dsync.WithReadLinger(c.RenewInterval()), dsync.WithProgressDeadline(d))
		if err != nil {
			t.Fatal(err)
		}
		rw.RLock()
		first := rw.Token()
		rw.RUnlock()
		time.Sleep(2 * d) // lingering, unreported, past the deadline
		rw.RLock()
		if tok := rw.Token(); tok != first {
			t.Errorf("the RLock after the deadline holds token %d; want the lingering claim's, %d", tok, first)
		}
		if err := rw.Err(); err != nil {
			t.Errorf("Err of the claim taken again: %v", err)
		}
		await(t, "Lost", rw.Lost()) // no report from now on
		wantStalled(t, "Err", rw.Err())
		wantStalled(t, "RUnlockContext", rw.RUnlockContext(context.Background()))
	})
}
