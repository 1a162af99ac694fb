package dsync_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// laggingClock is the time package's clock, except that a timer set for a
// positive duration fires lag late, as a timer armed before a suspend can
// when it counts only awake time. Timers due now fire at once.
type laggingClock struct{ lag time.Duration }

func (laggingClock) Now() time.Time { return time.Now() }

func (c laggingClock) AfterFunc(d time.Duration, f func()) func() bool {
	if d > 0 {
		d += c.lag
	}
	return time.AfterFunc(d, f).Stop
}

// lateRenewals answers the first renewal slow, after the session's
// deadline, and every later one at once; past max renewals it blocks until
// the call's context ends, so that a storm cannot spin forever in a bubble.
type lateRenewals struct {
	*memory.Store
	slow  time.Duration
	max   int64
	calls atomic.Int64
}

func (b *lateRenewals) RenewSession(ctx context.Context, session string, gen int, expires time.Time) (bool, error) {
	switch n := b.calls.Add(1); {
	case n == 1:
		time.Sleep(b.slow)
	case n > b.max:
		<-ctx.Done()
		return false, context.Cause(ctx)
	}
	return b.Store.RenewSession(ctx, session, gen, expires)
}

// Roles: the store's, without the record of up-time (withoutUptime).
func (b *lateRenewals) Roles() driver.Roles { return withoutUptime(b.Store.Roles()) }

// TestLateConfirmationRetiresTheSession: a renewal confirmed after the
// deadline does not count, and the session is over: the keeper must not
// send renewal after renewal (each due a renew interval after the last one
// counted, long past) until the deadline timer, late after a suspend,
// retires it.
func TestLateConfirmationRetiresTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 2 * time.Second // deadline 1.9 s, first renewal due at 0.67 s
		b := &lateRenewals{Store: memory.New(), slow: 300 * time.Millisecond, max: 50}
		m := newMutex(t, newClient(t, b, dsync.ClientWithTTL(ttl), dsync.WithClock(laggingClock{lag: time.Second})), "k")
		m.Lock()
		lost := m.Lost()
		// The renewal goes out at 1.67 s (its timer lags) and is confirmed
		// at 1.97 s, past the deadline.
		time.Sleep(2 * time.Second)
		select {
		case <-lost:
		default:
			t.Error("Lost still open after a renewal was confirmed past the deadline")
		}
		time.Sleep(2 * time.Second)
		if n := b.calls.Load(); n > 2 {
			t.Errorf("%d renewals after a confirmation past the deadline, want at most 2", n)
		}
		if err := m.UnlockContext(context.Background()); err == nil {
			t.Error("Unlock after the loss reported no error")
		}
		time.Sleep(2 * ttl) // a renewal blocked in the backend times out
	})
}

// TestUnlockOnceTheSessionIsJudgedOver: a holder paused just before
// Unlock and resumed past its deadline calls Unlock while every timer
// fires at once, so its Unlock may run right after the keeper judged the
// session over, by the deadline timer or by a renewal reply that came too
// late. The deadline has passed: Unlock must report ErrLost, not release
// and return nil, and Lost must be closed already. (The soak's SIGSTOP
// before Unlock found an Unlock that returned nil there: late-unlock, in
// round 7 of 20.) The keeper's goroutine is stopped at that moment
// (OnJudgedOver) while the test's goroutine calls Lost and Unlock.
func TestUnlockOnceTheSessionIsJudgedOver(t *testing.T) {
	t.Run("by the deadline timer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mem := dsync.NewMemClient(dsync.ClientWithTTL(time.Second))
			m := newMutex(t, mem.Client, "k")
			judged, resume := stopWhenJudged(m)
			start := time.Now()
			m.Lock()
			mem.SetReachable(false) // renewals fail: the deadline timer ends the session
			<-judged
			if at := time.Since(start); at != 950*time.Millisecond {
				t.Errorf("judged over at %v, want at the deadline (950ms)", at)
			}
			mem.SetReachable(true) // a release would go through
			lateUnlock(t, m)
			resume()
			mem.Close()
		})
	})
	t.Run("by a renewal reply past the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// The deadline is at 1.9 s and its timer fires at 2.9 s; the
			// first renewal is due at 0.67 s and sent at 1.67 s.
			const ttl = 2 * time.Second
			mem := dsync.NewMemClient(dsync.ClientWithTTL(ttl), dsync.WithClock(laggingClock{lag: time.Second}))
			m := newMutex(t, mem.Client, "k")
			judged, resume := stopWhenJudged(m)
			start := time.Now()
			m.Lock()
			mem.SetAnswering(false)
			time.Sleep(1950 * time.Millisecond)
			mem.SetAnswering(true) // the renewal is answered now, past the deadline
			<-judged
			if at := time.Since(start); at != 1950*time.Millisecond {
				t.Errorf("judged over at %v, want when the renewal was answered (1.95s), before the deadline timer", at)
			}
			lateUnlock(t, m)
			resume()
			mem.Close()
		})
	})
}

// stopWhenJudged stops the goroutine that first judges a session of m's
// keeper over, right after it did, until resume is called; judged is
// closed when it stops there.
func stopWhenJudged(m *dsync.Mutex) (judged <-chan struct{}, resume func()) {
	stopped, resumed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	dsync.OnJudgedOver(m, func() {
		once.Do(func() {
			close(stopped)
			<-resumed
		})
	})
	return stopped, func() { close(resumed) }
}

// lateUnlock checks that m's hold, whose deadline has passed, is lost
// for Lost and Unlock.
func lateUnlock(t *testing.T, m *dsync.Mutex) {
	t.Helper()
	select {
	case <-m.Lost():
	default:
		t.Error("Lost still open once the session was judged over")
	}
	if err := m.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
		t.Errorf("UnlockContext once the session was judged over = %v, want ErrLost", err)
	}
}
