package clockcheck

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// checkContains checks that the estimate contains the true server time now.
func checkContains(t *testing.T, e *Estimator, w *world, when string) bool {
	t.Helper()
	iv := e.Now()
	truth := w.serverNow()
	if !iv.Contains(truth) {
		t.Errorf("%s: server time %v not in [%v, %v] (off by %v; sample %+v)",
			when, truth.Format(time.RFC3339Nano), iv.Earliest.Format(time.RFC3339Nano), iv.Latest.Format(time.RFC3339Nano),
			outside(iv, truth), e.Sample())
		return false
	}
	return true
}

func outside(iv Interval, t time.Time) time.Duration {
	if t.Before(iv.Earliest) {
		return t.Sub(iv.Earliest)
	}
	return t.Sub(iv.Latest)
}

// watch checks containment every step for total, while the Estimator
// re-samples in the background.
func watch(t *testing.T, e *Estimator, w *world, total, step time.Duration) {
	t.Helper()
	for el := time.Duration(0); el <= total; el += step {
		if !checkContains(t, e, w, "after "+el.String()) {
			return
		}
		time.Sleep(step)
	}
}

func newTestEstimator(t *testing.T, w *world, opts ...Option) *Estimator {
	t.Helper()
	e, err := newEstimator(t.Context(), w, mustConfig(t, append([]Option{WithClock(w)}, opts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEstimatorContainsServerTime(t *testing.T) {
	legs := []struct {
		name    string
		upShare float64
	}{{"symmetric", 0.5}, {"all on the way out", 1}, {"all on the way back", 0}}
	for _, skew := range []time.Duration{-time.Hour, 0, time.Hour} {
		for _, rtt := range []time.Duration{0, time.Millisecond, 7 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond} {
			for _, leg := range legs {
				t.Run(skew.String()+"/"+rtt.String()+"/"+leg.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						w := newWorld()
						w.wallSkew = skew
						// Round trips vary between rtt and 2*rtt.
						w.legs = func(i int) (time.Duration, time.Duration) {
							d := rtt + rtt*time.Duration((i*7)%5)/4
							up := scale(d, leg.upShare)
							return up, d - up
						}
						e := newTestEstimator(t, w)
						defer e.Close()
						checkOffset(t, e.Sample(), w.trueOffset())
						watch(t, e, w, 3*time.Hour, 7300*time.Millisecond)
						checkOffset(t, e.Sample(), w.trueOffset())
					})
				})
			}
		}
	}
}

func TestEstimatorWallClockJumps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.legs = fixedLegs(30*time.Millisecond, 0.5)
		e := newTestEstimator(t, w, WithInterval(time.Minute))
		defer e.Close()
		watch(t, e, w, 10*time.Minute, 3*time.Second)

		for _, jump := range []time.Duration{5 * time.Hour, -7 * time.Hour, 90 * time.Minute} {
			w.jumpWall(jump)
			if !checkContains(t, e, w, "right after a jump of "+jump.String()) {
				return
			}
			watch(t, e, w, 10*time.Minute, 3*time.Second)
			// Re-samples took the jump into account.
			checkOffset(t, e.Sample(), w.trueOffset())
		}

		// A jump while a re-sample's round trip is in flight.
		w.mu.Lock()
		w.jumpInFlight = -3 * time.Hour
		w.mu.Unlock()
		watch(t, e, w, 10*time.Minute, 3*time.Second)
		checkOffset(t, e.Sample(), w.trueOffset())
	})
}

// driftCases are local clocks whose rate relative to the server's is within
// 1% of the default bound, made by drifting either clock.
var driftCases = []struct {
	name                  string
	serverRate, localRate float64
}{
	{"no drift", 1, 1},
	{"server fast", 1 + 0.99*DefaultMaxDrift, 1},
	{"server slow", 1 - 0.99*DefaultMaxDrift, 1},
	{"local fast", 1, 1 / (1 - 0.99*DefaultMaxDrift)},
	{"local slow", 1, 1 / (1 + 0.99*DefaultMaxDrift)},
}

func TestEstimatorDrift(t *testing.T) {
	for _, tc := range driftCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("re-sampling", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := newWorld()
					w.wallSkew = time.Hour
					w.serverRate, w.localRate = tc.serverRate, tc.localRate
					w.legs = fixedLegs(200*time.Millisecond, 1)
					e := newTestEstimator(t, w)
					defer e.Close()
					watch(t, e, w, 3*time.Hour, 11*time.Second)
				})
			})
			t.Run("server unreachable after the first sample", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := newWorld()
					w.wallSkew = -time.Hour
					w.serverRate, w.localRate = tc.serverRate, tc.localRate
					w.legs = fixedLegs(200*time.Millisecond, 0)
					w.fail = func(i int) error {
						if i >= DefaultSamples {
							return errServerDown
						}
						return nil
					}
					e := newTestEstimator(t, w)
					defer e.Close()
					// A day on one sample: the drift allowance, ±43s,
					// is almost all used up.
					watch(t, e, w, 24*time.Hour, 10*time.Minute)
				})
			})
		})
	}
}

// TestEstimatorDriftBeyondBound shows that the containment checks can fail:
// a clock drifting faster than the bound escapes the interval.
func TestEstimatorDriftBeyondBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.serverRate = 1 + 1.02*DefaultMaxDrift
		w.legs = fixedLegs(200*time.Millisecond, 0.5)
		w.fail = func(i int) error {
			if i >= DefaultSamples {
				return errServerDown
			}
			return nil
		}
		e := newTestEstimator(t, w)
		defer e.Close()
		time.Sleep(24 * time.Hour)
		if iv := e.Now(); iv.Contains(w.serverNow()) {
			t.Errorf("server time %v in [%v, %v] despite drift beyond the bound", w.serverNow(), iv.Earliest, iv.Latest)
		}
	})
}

func TestEstimatorUntil(t *testing.T) {
	for _, tc := range driftCases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				w.wallSkew = 2 * time.Hour
				w.serverRate, w.localRate = tc.serverRate, tc.localRate
				w.legs = fixedLegs(40*time.Millisecond, 1)
				// No re-samples during the waits.
				e := newTestEstimator(t, w, WithInterval(1000*time.Hour))
				defer e.Close()

				for _, ahead := range []time.Duration{-time.Second, 0, time.Millisecond, time.Second, time.Minute, time.Hour, 10 * time.Hour} {
					target := w.serverNow().Add(ahead)
					d := e.Until(target)
					if !e.Now().Earliest.Before(target) {
						if d != 0 {
							t.Errorf("Until(now%+v) = %v, want 0: Earliest already at or after it", ahead, d)
						}
						continue
					}
					// Until is not much longer than needed.
					s, now := e.Sample(), w.Monotonic()
					if early := e.intervalAt(s, now+d-time.Microsecond).Earliest; !early.Before(target) {
						t.Errorf("Until(now%+v) = %v, but Earliest reaches the target 1µs earlier", ahead, d)
					}
					// The caller waits on the local monotonic clock.
					time.Sleep(time.Duration(float64(d)/tc.localRate) + 1)
					if iv := e.Now(); iv.Earliest.Before(target) {
						t.Errorf("after waiting Until(now%+v) = %v: Earliest %v is %v before the target", ahead, d, iv.Earliest, target.Sub(iv.Earliest))
					}
					if truth := w.serverNow(); truth.Before(target) {
						t.Errorf("after waiting Until(now%+v) = %v: server time %v is before the target", ahead, d, truth)
					}
					if got := e.Until(target); got != 0 {
						t.Errorf("Until(now%+v) after waiting = %v, want 0", ahead, got)
					}
					checkContains(t, e, w, "after waiting")
				}
			})
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestEstimatorKeepsBestSample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = time.Minute
		var (
			mu      sync.Mutex
			rtt     = 200 * time.Millisecond
			failing bool
		)
		set := func(d time.Duration, fail bool) {
			mu.Lock()
			defer mu.Unlock()
			rtt, failing = d, fail
		}
		w := newWorld()
		w.legs = func(int) (time.Duration, time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			return rtt / 2, rtt / 2
		}
		w.fail = func(int) error {
			mu.Lock()
			defer mu.Unlock()
			if failing {
				return errServerDown
			}
			return nil
		}
		var log syncBuffer
		logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		e := newTestEstimator(t, w, WithInterval(interval), WithLogger(logger))
		defer e.Close()
		first := e.Sample()
		// nextRound waits for the next re-sample to finish.
		nextRound := func() {
			time.Sleep(interval)
			synctest.Wait()
			time.Sleep(5 * 200 * time.Millisecond)
			synctest.Wait()
			checkContains(t, e, w, "after a re-sample")
		}

		set(2*time.Millisecond, false)
		nextRound()
		better := e.Sample()
		if better.RTT != 2*time.Millisecond || better.Taken <= first.Taken {
			t.Errorf("a narrower sample did not replace the first: %+v", better)
		}

		set(100*time.Millisecond, false)
		nextRound()
		if got := e.Sample(); got != better {
			t.Errorf("a wider sample replaced a narrower one: %+v", got)
		}

		set(0, true)
		nextRound()
		if got := e.Sample(); got != better {
			t.Errorf("a failed re-sample replaced the sample: %+v", got)
		}
		if !strings.Contains(log.String(), "re-sample failed") || !strings.Contains(log.String(), "server down") {
			t.Errorf("failed re-sample not logged; log:\n%s", log.String())
		}

		// After long enough, a fresh wider sample is narrower than the
		// old one has become: 100ms of uncertainty is 200s of drift.
		set(100*time.Millisecond, false)
		for range 5 {
			nextRound()
		}
		if got := e.Sample(); got.RTT != 100*time.Millisecond {
			t.Errorf("an aged sample was not replaced: %+v", got)
		}

		// The server's clock is stepped: the estimate is wrong until a
		// re-sample shows the contradiction and replaces it.
		w.stepServer(-10 * time.Second)
		set(200*time.Millisecond, false)
		nextRound()
		if got := e.Sample(); got.RTT != 200*time.Millisecond {
			t.Errorf("a contradicting sample did not replace the old one: %+v", got)
		}
		if !strings.Contains(log.String(), "server time outside the estimate") {
			t.Errorf("contradiction not logged; log:\n%s", log.String())
		}
		watch(t, e, w, 10*time.Minute, 7*time.Second)
	})
}

func TestEstimatorClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.legs = fixedLegs(10*time.Millisecond, 0.5)
		e := newTestEstimator(t, w, WithInterval(time.Second))
		time.Sleep(10 * time.Second)

		// Concurrent and repeated Closes all return once the goroutine is gone.
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if err := e.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
		}
		wg.Wait()
		if err := e.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		calls := w.callCount()
		time.Sleep(time.Minute)
		if n := w.callCount(); n != calls {
			t.Errorf("%d hello calls after Close", n-calls)
		}
		// Now still works, from the last sample.
		checkContains(t, e, w, "a minute after Close")
		// synctest.Test fails if the goroutine were still around.
	})
}

func TestEstimatorCloseDuringResample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.legs = fixedLegs(10*time.Millisecond, 0.5)
		var log syncBuffer
		e := newTestEstimator(t, w, WithInterval(time.Second), WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		// Round trips now take an hour: Close must not wait for them.
		w.mu.Lock()
		w.legs = fixedLegs(time.Hour, 0.5)
		w.mu.Unlock()
		time.Sleep(1500 * time.Millisecond)
		start := time.Now()
		e.Close()
		if d := time.Since(start); d != 0 {
			t.Errorf("Close took %v", d)
		}
		if log.String() != "" {
			t.Errorf("Close logged:\n%s", log.String())
		}
	})
}

func TestEstimatorFirstSampleFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.fail = func(int) error { return errServerDown }
		e, err := newEstimator(t.Context(), w, mustConfig(t, WithClock(w)))
		if err == nil || e != nil {
			t.Fatalf("newEstimator = %v, %v; want an error", e, err)
		}
	})
}

// TestEstimatorTightUpperBound is the worst case for Latest: the server's
// clock, fast within the bound, is read at the start of the round trip, just
// before it ticks to the next millisecond. Only the 1 ms resolution and the
// drift over the half round trip keep it inside.
func TestEstimatorTightUpperBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.serverStart = w.origin.Add(999 * time.Microsecond)
		w.serverRate = 1 + 0.99*DefaultMaxDrift
		w.legs = fixedLegs(200*time.Millisecond, 0)
		e := newTestEstimator(t, w, WithSamples(1))
		defer e.Close()
		checkContains(t, e, w, "right after the sample")
	})
}

func TestProbeReplacesHello(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.stepServer(3 * time.Hour)
		w.legs = fixedLegs(4*time.Millisecond, 0.5)
		// No database at all: the probe is the only way to the server.
		e, err := NewEstimator(t.Context(), nil, WithProbe(w.serverTime), WithClock(w), WithSamples(2))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if n := w.callCount(); n != 2 {
			t.Errorf("the probe was called %d times for 2 samples", n)
		}
		checkContains(t, e, w, "after the first measurement")

		w.fail = func(int) error { return errServerDown }
		_, err = Measure(t.Context(), nil, WithProbe(w.serverTime), WithClock(w))
		if err == nil || !strings.HasPrefix(err.Error(), "clockcheck: probe: ") {
			t.Errorf("a failed probe's error does not name it: %v", err)
		}
		if _, err := Measure(t.Context(), nil); err != ErrNilDatabase {
			t.Errorf("nil db without a probe: %v, want ErrNilDatabase", err)
		}
		if _, err := newConfig([]Option{WithProbe(nil)}); err == nil || !strings.Contains(err.Error(), "WithProbe(nil)") {
			t.Errorf("WithProbe(nil): %v", err)
		}
	})
}

// A failover hands the samples to another member whose clock is off by up
// to the member skew: the estimate must hold the new member's time at once,
// and after ResampleNow follow it even if the new sample is wider.
func TestEstimatorServerChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const skew = 50 * time.Millisecond
		w := newWorld()
		w.legs = fixedLegs(2*time.Millisecond, 0.5)
		var log syncBuffer
		logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		e := newTestEstimator(t, w, WithMemberSkew(skew), WithLogger(logger))
		defer e.Close()
		if iv := e.Now(); iv.Latest.Sub(iv.Earliest) < 2*skew {
			t.Errorf("interval %v wide, narrower than twice the member skew", iv.Latest.Sub(iv.Earliest))
		}
		first := e.Sample()

		// The new primary's clock is 45 ms ahead, and the path to it is
		// slower: its samples are wider than the old one.
		w.stepServer(45 * time.Millisecond)
		w.setLegs(fixedLegs(20*time.Millisecond, 0.5))
		checkContains(t, e, w, "right after the failover")

		// Requests made while one is pending are served by it; one made
		// while a re-sample runs asks for one more: five requests in a row
		// make one or two re-samples.
		for range 5 {
			e.ResampleNow()
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := e.Sample()
		if got == first || got.RTT != 20*time.Millisecond {
			t.Fatalf("ResampleNow did not replace the sample with the new server's: %+v", got)
		}
		if n := w.callCount(); n != 2*DefaultSamples && n != 3*DefaultSamples {
			t.Errorf("%d probes, want %d or %d: one or two re-samples for five requests", n, 2*DefaultSamples, 3*DefaultSamples)
		}
		if !strings.Contains(log.String(), "may have changed") {
			t.Errorf("the forced re-sample was not logged; log:\n%s", log.String())
		}
		// Now centred on the new clock: it holds even once the skew is gone.
		if mid := got.ServerTime.Sub(first.ServerTime.Add(got.Taken - first.Taken)); mid < 40*time.Millisecond {
			t.Errorf("the estimate moved by %v, want about 45ms", mid)
		}
		watch(t, e, w, 3*time.Minute, 7*time.Second)

		if _, err := newConfig([]Option{WithMemberSkew(-time.Millisecond)}); err == nil {
			t.Error("a negative member skew was accepted")
		}
	})
}

// With a member skew, a periodic re-sample replaces the sample in use even
// when it is wider: a failover no one reported moves the samples to the new
// primary within the re-sample interval. Without one, the narrower sample
// stays.
func TestEstimatorMemberSkewFollowsPeriodically(t *testing.T) {
	for _, skew := range []time.Duration{0, 50 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			w.legs = fixedLegs(2*time.Millisecond, 0.5)
			e := newTestEstimator(t, w, WithMemberSkew(skew))
			defer e.Close()
			// A quiet failover to a member 5 ms ahead behind a slow path.
			w.stepServer(5 * time.Millisecond)
			w.setLegs(fixedLegs(200*time.Millisecond, 0.5))
			time.Sleep(DefaultInterval + 10*time.Second)
			synctest.Wait()
			followed := e.Sample().RTT == 200*time.Millisecond
			if followed != (skew > 0) {
				t.Errorf("member skew %v: after a re-sample the sample in use has RTT %v; want the new server's: %v", skew, e.Sample().RTT, skew > 0)
			}
			checkContains(t, e, w, "after the re-sample")
		})
	}
}

// Without the member skew, the old sample's interval misses the new
// primary's clock: the negative control of TestEstimatorServerChange.
func TestEstimatorServerChangeWithoutSkewIsWrong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.legs = fixedLegs(2*time.Millisecond, 0.5)
		e := newTestEstimator(t, w)
		defer e.Close()
		w.stepServer(45 * time.Millisecond)
		if iv := e.Now(); iv.Contains(w.serverNow()) {
			t.Errorf("without a member skew the old interval [%v, %v] still holds a clock 45ms ahead", iv.Earliest, iv.Latest)
		}
	})
}

// TestEstimatorSampled: a caller's own command whose reply carries the
// server's time gives a sample, kept when narrower; while such samples
// come at least once per interval the periodic re-sample is skipped on one
// server, and goes on with a member skew. A failed command, or one whose
// reply has no time, gives none.
func TestEstimatorSampled(t *testing.T) {
	for _, skew := range []time.Duration{0, 50 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			w.legs = fixedLegs(20*time.Millisecond, 0.5)
			e := newTestEstimator(t, w, WithMemberSkew(skew))
			defer e.Close()
			probes := w.callCount()
			// The caller's command: the same server, a faster path.
			own := &world{origin: w.origin, serverStart: w.serverStart, serverRate: 1, localRate: 1, monoBase: w.monoBase, legs: fixedLegs(2*time.Millisecond, 0.5)}
			for i := range 30 { // 5 s apart, as renewals: two and a half intervals
				if err := e.Sampled(t.Context(), own.serverTime); err != nil {
					t.Fatal(err)
				}
				if i == 0 && e.Sample().RTT != 2*time.Millisecond {
					t.Fatalf("a narrower sample from the caller's command was not kept: %+v", e.Sample())
				}
				checkContains(t, e, w, "after a sample of the caller's")
				time.Sleep(5 * time.Second)
				synctest.Wait()
			}
			resampled := w.callCount() - probes
			if skew == 0 && resampled != 0 || skew > 0 && resampled < 2*DefaultSamples {
				t.Errorf("member skew %v: %d periodic round trips in 150 s of the caller's samples; want none on one server, two re-samples' with a skew", skew, resampled)
			}

			before := e.Sample()
			if err := e.Sampled(t.Context(), func(context.Context) (time.Time, error) { return time.Time{}, errServerDown }); err != errServerDown {
				t.Errorf("Sampled = %v, want the command's error", err)
			}
			if err := e.Sampled(t.Context(), func(context.Context) (time.Time, error) { return time.Time{}, nil }); err != nil {
				t.Errorf("Sampled of a reply without time = %v", err)
			}
			if e.Sample() != before {
				t.Errorf("a failed or timeless command changed the sample: %+v", e.Sample())
			}
		})
	}
}
