package suspend

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// boundsReader returns a reader of the given readings, the last repeated.
func boundsReader(readings ...[2]time.Duration) reader {
	var i atomic.Int64
	return func() (lo, hi time.Duration, ok bool) {
		r := readings[min(int(i.Add(1))-1, len(readings)-1)]
		return r[0], r[1], true
	}
}

func TestElapsedCountsGrowthBeyondThreshold(t *testing.T) {
	c := newCounter(boundsReader(
		[2]time.Duration{100, 200},                                 // creation: base = 200
		[2]time.Duration{150, 250},                                 // noise: not counted
		[2]time.Duration{200 + threshold, 300 + threshold},         // exactly the threshold: not counted
		[2]time.Duration{200 + 5*time.Second, 300 + 5*time.Second}, // a suspend
		[2]time.Duration{200 + 4*time.Second, 300 + 4*time.Second}, // lower: ignored
		[2]time.Duration{200 + 5*time.Second + threshold/2, 0},     // small growth: ignored
	), false, Step)
	for i, want := range []time.Duration{0, 0, 5 * time.Second, 5 * time.Second, 5 * time.Second} {
		if got := c.Elapsed(); got != want {
			t.Fatalf("reading %d: Elapsed = %v, want %v", i+1, got, want)
		}
	}
}

func TestElapsedWithoutSourceIsZero(t *testing.T) {
	fail := func() (lo, hi time.Duration, ok bool) { return 0, 0, false }
	for _, c := range []*Counter{newCounter(nil, false, Step), newCounter(fail, false, Step)} {
		if c.Elapsed() != 0 {
			t.Fatal("Elapsed != 0 without a source")
		}
		before := time.Now()
		if now := c.Now(); now.Before(before) || !hasMonotonic(now) {
			t.Fatalf("Now = %v, not time.Now", now)
		}
	}
}

func TestNowIncludesSuspendedTime(t *testing.T) {
	c, suspend := Fake(Step)
	suspend(20 * time.Second)
	before := time.Now()
	now := c.Now()
	after := time.Now()
	if !hasMonotonic(now) {
		t.Fatal("Now lost the monotonic reading")
	}
	if now.Before(before.Add(20*time.Second)) || now.After(after.Add(20*time.Second)) {
		t.Fatalf("Now = time.Now %+v, want +20s", now.Sub(before))
	}
}

// TestTimerCarriedPastItsTimeFiresWithinAStep is the point of AfterFunc: a
// Go timer armed for 14 s fires 14 s of awake time later, but a suspend of
// 20 s two seconds in has carried it past its time.
func TestTimerCarriedPastItsTimeFiresWithinAStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, suspend := Fake(Step)
		start := time.Now()
		fired := make(chan time.Time, 1)
		c.AfterFunc(14*time.Second, func() { fired <- time.Now() })
		time.Sleep(2 * time.Second)
		suspend(20 * time.Second)
		select {
		case at := <-fired:
			if awake := at.Sub(start); awake > 2*time.Second+Step {
				t.Fatalf("fired after %v of awake time, want within a step of the resume at 2s", awake)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not fired 10s of awake time after a resume past its time")
		}
	})
}

// A timer that a suspend moved closer but not past fires at its time on
// the counter's clock.
func TestTimerMovedCloserFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, suspend := Fake(Step)
		start := c.Now()
		fired := make(chan time.Time, 1)
		c.AfterFunc(30*time.Second, func() { fired <- c.Now() })
		time.Sleep(2 * time.Second)
		suspend(20 * time.Second)
		at := <-fired
		if got := at.Sub(start); got < 30*time.Second || got > 30*time.Second+Step {
			t.Fatalf("fired %v after arming on the counter's clock, want 30s to 30s+Step", got)
		}
	})
}

func TestTimerWithoutSuspendFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := Fake(Step)
		for _, d := range []time.Duration{-time.Second, 0, time.Millisecond, 3500 * time.Millisecond} {
			start := time.Now()
			fired := make(chan time.Time, 1)
			c.AfterFunc(d, func() { fired <- time.Now() })
			if got := (<-fired).Sub(start); got != max(d, 0) {
				t.Fatalf("AfterFunc(%v) fired after %v", d, got)
			}
		}
	})
}

func TestStopContract(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, suspend := Fake(Step)
		var calls atomic.Int32
		f := func() { calls.Add(1) }

		// Stopped before its time, across a re-arm by the watcher.
		stop := c.AfterFunc(time.Minute, f)
		time.Sleep(5 * time.Second)
		suspend(10 * time.Second)
		time.Sleep(2 * Step)
		if !stop() {
			t.Fatal("stop before the time = false, want true")
		}
		if stop() {
			t.Fatal("second stop = true, want false")
		}
		time.Sleep(2 * time.Minute)
		if n := calls.Load(); n != 0 {
			t.Fatalf("stopped timer called f %d times", n)
		}

		// Stopped after it fired.
		stop = c.AfterFunc(time.Second, f)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("f called %d times, want 1", n)
		}
		if stop() {
			t.Fatal("stop after the call = true, want false")
		}

		// f may stop its own timer.
		self := make(chan func() bool, 1)
		done := make(chan bool)
		self <- c.AfterFunc(0, func() { done <- (<-self)() })
		if <-done {
			t.Fatal("stop from within f = true, want false")
		}
	})
}

// TestStopRaces checks, with real timers and the race detector, that every
// timer is either called once or stopped, never both and never neither,
// while suspends re-arm them.
func TestStopRaces(t *testing.T) {
	c, suspend := Fake(time.Millisecond)
	const n = 2000
	var calls, stopped atomic.Int32
	called := make([]atomic.Int32, n)
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
				suspend(2 * time.Millisecond)
			}
		}
	}()
	for i := range n {
		wg.Go(func() {
			d := time.Duration(i%50) * 100 * time.Microsecond
			stop := c.AfterFunc(d, func() {
				called[i].Add(1)
				calls.Add(1)
			})
			time.Sleep(time.Duration(i%7) * 300 * time.Microsecond)
			if stop() {
				stopped.Add(1)
			}
		})
	}
	wg.Wait()
	close(done)
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load()+stopped.Load() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // a call after a successful stop would show up here
	if got := calls.Load() + stopped.Load(); got != n {
		t.Fatalf("%d calls + %d stops = %d, want %d", calls.Load(), stopped.Load(), got, n)
	}
	for i := range called {
		if k := called[i].Load(); k > 1 {
			t.Fatalf("timer %d called %d times", i, k)
		}
	}
	waitIdle(t, c)
}

// waitIdle waits for c's watcher to exit.
func waitIdle(t *testing.T, c *Counter) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		idle := c.idle == nil
		c.mu.Unlock()
		if idle {
			return
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("watcher still running with no timer pending")
		}
	}
}

// The watcher exits as soon as no timer is pending, not at its next check.
func TestWatcherExitsWhenIdle(t *testing.T) {
	c, _ := Fake(time.Hour)
	stop := c.AfterFunc(time.Hour, func() {})
	stop()
	waitIdle(t, c)
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	waitIdle(t, c)
}

// TestWatcherRealTime runs the watcher on real timers, as Process does
// outside tests.
func TestWatcherRealTime(t *testing.T) {
	c, suspend := Fake(10 * time.Millisecond)
	fired := make(chan struct{})
	start := time.Now()
	c.AfterFunc(time.Hour, func() { close(fired) })
	suspend(2 * time.Hour)
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("a timer a suspend carried past its time did not fire")
	}
	t.Logf("fired %v after the suspend", time.Since(start))
	waitIdle(t, c)
}

// Process relies on time.Now carrying a monotonic reading outside
// testing/synctest bubbles and none inside: that is how it tells fake time,
// which it leaves alone, from real time.
func TestProcessInsideBubbleIsPlainTime(t *testing.T) {
	if !hasMonotonic(time.Now()) {
		t.Fatal("time.Now has no monotonic reading outside a bubble")
	}
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		if hasMonotonic(now) {
			t.Fatal("time.Now has a monotonic reading inside a synctest bubble: Process would count real suspends in fake time")
		}
		if got := Process.Now(); !got.Equal(now) {
			t.Fatalf("Process.Now = %v in a bubble, want time.Now = %v", got, now)
		}
		fired := false
		Process.AfterFunc(time.Second, func() { fired = true })
		time.Sleep(time.Second)
		synctest.Wait()
		if !fired {
			t.Fatal("Process.AfterFunc did not fire on fake time")
		}
	})
}

// Process's own timers outside bubbles: they fire, stop, and leave no
// watcher behind. On Linux they go through the watcher.
func TestProcessRealTime(t *testing.T) {
	fired := make(chan struct{})
	start := Process.Now()
	Process.AfterFunc(5*time.Millisecond, func() { close(fired) })
	stop := Process.AfterFunc(time.Hour, func() { t.Error("stopped timer fired") })
	<-fired
	if d := Process.Now().Sub(start); d < 5*time.Millisecond {
		t.Fatalf("fired after %v, want 5ms", d)
	}
	if !stop() {
		t.Fatal("stop = false before the time")
	}
	waitIdle(t, Process)
}
