package clockcheck

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/internal/suspend"
)

func TestSystemClockMonotonicCountsSuspend(t *testing.T) {
	counter, suspendFor := suspend.Fake()
	clk := systemClock{counter}
	before := clk.Monotonic()
	suspendFor(20 * time.Second)
	after := clk.Monotonic()
	if d := after - before; d < 20*time.Second || d > 21*time.Second {
		t.Fatalf("Monotonic advanced %v over a 20s suspend, want 20s and a little", d)
	}
	if d := clk.Monotonic() - after; d < 0 {
		t.Fatalf("Monotonic went back %v", -d)
	}
}

// sleepyWorld is a world whose machine sleeps: true time, and so the
// server's clock and the local wall clock, advance by asleep more than the
// bubble's fake time, which plays the local awake time.
type sleepyWorld struct {
	*world
	asleep atomic.Int64
}

func (s *sleepyWorld) serverNow() time.Time {
	return s.world.serverNow().Add(time.Duration(s.asleep.Load()))
}

func (s *sleepyWorld) serverTime(ctx context.Context) (time.Time, error) {
	st, err := s.world.serverTime(ctx)
	if err != nil {
		return st, err
	}
	return st.Add(time.Duration(s.asleep.Load())), nil
}

// sleepyClock is the local clock of a sleepyWorld: the system clock over a
// fake suspend source, and a wall clock that counts the sleep.
type sleepyClock struct {
	systemClock
	w *sleepyWorld
}

func (c sleepyClock) Wall() time.Time {
	return c.w.Wall().Add(time.Duration(c.w.asleep.Load()))
}

// TestEstimatorAcrossSuspend: after the machine sleeps, the server's clock
// has moved on by the sleep. An Estimator whose monotonic clock missed the
// sleep would put the server's time a whole sleep too early until its next
// re-sample.
func TestEstimatorAcrossSuspend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter, suspendFor := suspend.Fake()
		w := &sleepyWorld{world: newWorld()}
		w.legs = fixedLegs(30*time.Millisecond, 0.5)
		e, err := newEstimator(t.Context(), w, mustConfig(t, WithClock(sleepyClock{systemClock{counter}, w}), WithInterval(time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		check := func(when string) bool {
			t.Helper()
			iv, truth := e.Now(), w.serverNow()
			if !iv.Contains(truth) {
				t.Errorf("%s: server time %v not in [%v, %v] (off by %v)", when,
					truth.Format(time.RFC3339Nano), iv.Earliest.Format(time.RFC3339Nano), iv.Latest.Format(time.RFC3339Nano), outside(iv, truth))
				return false
			}
			return true
		}
		time.Sleep(90 * time.Second)
		for _, sleep := range []time.Duration{20 * time.Second, 3 * time.Hour} {
			// The machine sleeps: true time moves on, awake time does not.
			w.asleep.Add(int64(sleep))
			suspendFor(sleep)
			if !check("right after a sleep of " + sleep.String()) {
				return
			}
			for range 10 {
				time.Sleep(10 * time.Second)
				if !check("after a sleep of " + sleep.String()) {
					return
				}
			}
		}
	})
}
