package dsync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
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

// TestLateConfirmationRetiresTheSession: a renewal confirmed after the
// deadline does not count, and the session is over: the keeper must not
// send renewal after renewal (each due a renew interval after the last one
// counted, long past) until the deadline timer, late after a suspend,
// retires it.
func TestLateConfirmationRetiresTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 2 * time.Second // deadline 1.9 s, first renewal due at 0.67 s
		b := &lateRenewals{Store: memory.New(), slow: 300 * time.Millisecond, max: 50}
		m := newMutex(t, newClient(t, b, dsync.WithTTL(ttl), dsync.WithClock(laggingClock{lag: time.Second})), "k")
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
