package dsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/suspend"
)

// TestLostClosesAtResumePastDeadline: a holder whose machine sleeps past
// its deadline must not go on believing it holds the lock for the rest of
// its TTL in awake time. Its deadline is 14.25 s after the acquire; the
// machine is suspended for 20 s two seconds in. Go's timers, which count
// awake time only, would close Lost 12.25 s after the resume; it must
// close at the resume.
func TestLostClosesAtResumePastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemoryBackend()
		m := newMutex(t, mem, "k", dsync.WithTTL(15*time.Second), dsync.WithClock(dsync.SuspendClock(counter)))
		m.Lock()
		lost := m.Lost() // taken before the suspend: only the deadline timer can close it

		time.Sleep(2 * time.Second)
		suspendFor(20 * time.Second)
		resumed := time.Now()

		select {
		case <-lost:
			if d := time.Since(resumed); d != 0 {
				t.Errorf("Lost closed %v after the resume, want at the resume", d)
			}
		case <-time.After(time.Second):
			t.Error("Lost still open a second after resuming 7.75 s past the deadline")
		}
		if err := m.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("UnlockContext after the suspend = %v, want ErrLost", err)
		}
	})
}

// A Lost or Unlock call right after the resume sees the deadline passed
// without waiting for any timer.
func TestCallsAfterResumePastDeadlineSeeTheLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemoryBackend()
		m := newMutex(t, mem, "k", dsync.WithTTL(15*time.Second), dsync.WithClock(dsync.SuspendClock(counter)))
		m.Lock()
		time.Sleep(2 * time.Second)
		suspendFor(20 * time.Second)
		select {
		case <-m.Lost():
		default:
			t.Fatal("Lost open right after resuming past the deadline")
		}
		if err := m.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("UnlockContext right after the suspend = %v, want ErrLost", err)
		}
	})
}

// A suspend shorter than the time left keeps the hold: the renewal that
// the suspend made overdue runs at the resume, in time.
func TestShortSuspendKeepsTheHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemoryBackend()
		m := newMutex(t, mem, "k", dsync.WithTTL(15*time.Second), dsync.WithClock(dsync.SuspendClock(counter)))
		m.Lock()
		lost := m.Lost()
		for range 5 {
			time.Sleep(2 * time.Second)
			suspendFor(10 * time.Second) // overdue for renewal, not yet past the deadline
		}
		time.Sleep(time.Minute)
		select {
		case <-lost:
			t.Fatal("hold lost over suspends shorter than the time left")
		default:
		}
		if err := m.UnlockContext(context.Background()); err != nil {
			t.Fatalf("UnlockContext = %v", err)
		}
	})
}

// TestValidUntilIsOnTimeNowsScale: ValidUntil maps the time left on the
// Mutex's clock onto time.Now, whatever the clock counted before the hold
// (here a 1 h suspend) and during it.
func TestValidUntilIsOnTimeNowsScale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		mem := dsync.NewMemoryBackend()
		m := newMutex(t, mem, "k", dsync.WithTTL(15*time.Second), dsync.WithRenewInterval(14*time.Second),
			dsync.WithClock(dsync.SuspendClock(counter)))
		suspendFor(time.Hour)
		m.Lock()
		if left := time.Until(m.ValidUntil()); left != 14250*time.Millisecond {
			t.Errorf("right after Lock, ValidUntil is %v from now; want 14.25s", left)
		}
		suspendFor(5 * time.Second)
		if left := time.Until(m.ValidUntil()); left != 9250*time.Millisecond {
			t.Errorf("after a 5 s suspend, ValidUntil is %v from now; want 9.25s", left)
		}
		m.Unlock()
	})
}
