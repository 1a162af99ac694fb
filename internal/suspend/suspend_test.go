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
	), false, nil)
	for i, want := range []time.Duration{0, 0, 5 * time.Second, 5 * time.Second, 5 * time.Second} {
		if got := c.Elapsed(); got != want {
			t.Fatalf("reading %d: Elapsed = %v, want %v", i+1, got, want)
		}
	}
}

func TestElapsedWithoutSourceIsZero(t *testing.T) {
	fail := func() (lo, hi time.Duration, ok bool) { return 0, 0, false }
	for _, c := range []*Counter{newCounter(nil, false, nil), newCounter(fail, false, nil)} {
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
	c, suspend := Fake()
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

// TestTimerCarriedPastItsTimeFiresAtResume is the point of AfterFunc: a Go
// timer armed for 14 s fires 14 s of awake time later, but a suspend of
// 20 s two seconds in has carried it past its time, so it fires on resume.
func TestTimerCarriedPastItsTimeFiresAtResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, suspend := Fake()
		start := time.Now()
		fired := make(chan time.Time, 1)
		c.AfterFunc(14*time.Second, func() { fired <- time.Now() })
		time.Sleep(2 * time.Second)
		suspend(20 * time.Second)
		select {
		case at := <-fired:
			if awake := at.Sub(start); awake != 2*time.Second {
				t.Fatalf("fired after %v of awake time, want at the resume at 2s", awake)
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
		c, suspend := Fake()
		start := c.Now()
		fired := make(chan time.Time, 1)
		c.AfterFunc(30*time.Second, func() { fired <- c.Now() })
		time.Sleep(2 * time.Second)
		suspend(20 * time.Second)
		if got := (<-fired).Sub(start); got != 30*time.Second {
			t.Fatalf("fired %v after arming on the counter's clock, want 30s", got)
		}
	})
}

// TestTimerDueShortlyAfterResumeFiresOnTime: a resume that leaves a timer
// 100–150 ms to run must not leave it to wait for anything but its
// target, which a suspend-counting clock reaches then.
func TestTimerDueShortlyAfterResumeFiresOnTime(t *testing.T) {
	for _, lead := range []time.Duration{100 * time.Millisecond, 120 * time.Millisecond, 150 * time.Millisecond} {
		t.Run(lead.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, suspend := Fake()
				target := c.Now().Add(14 * time.Second)
				fired := make(chan time.Time, 1)
				c.AfterFunc(14*time.Second, func() { fired <- c.Now() })
				time.Sleep(2050 * time.Millisecond)
				suspend(target.Sub(c.Now()) - lead)
				if left := target.Sub(c.Now()); left != lead {
					t.Fatalf("resumed %v before the target, want %v", left, lead)
				}
				if late := (<-fired).Sub(target); late < 0 || late > 2*time.Millisecond {
					t.Fatalf("fired %v after its target, %v after a resume; want within 2ms of the target", late, lead)
				}
			})
		})
	}
}

// Timers on either side of a suspend: those it carried past fire at the
// resume, and the others when their time comes.
func TestSuspendFiresOnlyTheTimersItCarriedPast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, suspend := Fake()
		start := c.Now()
		var mu sync.Mutex
		firedAt := make(map[time.Duration]time.Duration) // by the time asked for
		for _, d := range []time.Duration{7, 3, 12, 5, 30, 9} {
			c.AfterFunc(d*time.Second, func() {
				mu.Lock()
				firedAt[d*time.Second] = c.Now().Sub(start)
				mu.Unlock()
			})
		}
		time.Sleep(time.Second)
		suspend(8 * time.Second) // the counter's clock is at 9s
		time.Sleep(time.Minute)
		want := map[time.Duration]time.Duration{
			3 * time.Second: 9 * time.Second, 5 * time.Second: 9 * time.Second,
			7 * time.Second: 9 * time.Second, 9 * time.Second: 9 * time.Second,
			12 * time.Second: 12 * time.Second, 30 * time.Second: 30 * time.Second,
		}
		mu.Lock()
		defer mu.Unlock()
		for d, w := range want {
			if got, ok := firedAt[d]; !ok || got != w {
				t.Errorf("AfterFunc(%v) fired at %v (%v), want at %v on the counter's clock", d, got, ok, w)
			}
		}
	})
}

func TestTimerWithoutSuspendFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := Fake()
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
		c, suspend := Fake()
		var calls atomic.Int32
		f := func() { calls.Add(1) }

		// Stopped before its time, across a suspend that woke the runner.
		stop := c.AfterFunc(time.Minute, f)
		time.Sleep(5 * time.Second)
		suspend(10 * time.Second)
		time.Sleep(2 * time.Second)
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
// while suspends wake the runner.
func TestStopRaces(t *testing.T) {
	c, suspend := Fake()
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

// waitIdle waits for c's runner to exit.
func waitIdle(t *testing.T, c *Counter) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		idle := !c.running && c.alarm == nil
		c.mu.Unlock()
		if idle {
			return
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("runner still running with no timer pending")
		}
	}
}

// The runner exits as soon as no timer is pending, not when the alarm set
// for the last one would have gone off.
func TestRunnerExitsWhenIdle(t *testing.T) {
	c, _ := Fake()
	stop := c.AfterFunc(time.Hour, func() {})
	stop()
	waitIdle(t, c)
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	waitIdle(t, c)
}

// TestFakeRealTime runs a Fake's runner on real timers.
func TestFakeRealTime(t *testing.T) {
	c, suspend := Fake()
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
// runner behind. On Linux they go through the runner.
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

// pollingFake is a Fake whose suspends the runner is not told of, with the
// alarm Process falls back to where it has no timerfd.
func pollingFake() (c *Counter, suspend func(d time.Duration)) {
	var total atomic.Int64
	read := func() (lo, hi time.Duration, ok bool) {
		s := time.Duration(total.Load())
		return s, s, true
	}
	c = newCounter(read, false, func(now func() time.Time) alarm { return newGoAlarm(now, pollInterval) })
	return c, func(d time.Duration) { total.Add(int64(d)) }
}

// Without a timerfd, a timer whose time a suspend carried past, or close
// to, fires within a poll interval of awake time, not after the rest of its
// time in awake time.
func TestPollingFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, suspend := pollingFake()
		start := c.Now()
		fired := make(chan time.Time, 2)
		c.AfterFunc(14*time.Second, func() { fired <- c.Now() })
		c.AfterFunc(30*time.Second, func() { fired <- c.Now() })
		time.Sleep(2500 * time.Millisecond)
		suspend(20 * time.Second) // the counter's clock is at 22.5s
		resumed := c.Now()
		if at := <-fired; at.Sub(resumed) > pollInterval {
			t.Errorf("carried past its time, fired %v after the resume, want within %v", at.Sub(resumed), pollInterval)
		}
		if late := (<-fired).Sub(start) - 30*time.Second; late < 0 || late > pollInterval {
			t.Errorf("moved closer, fired %v after its time, want within %v", late, pollInterval)
		}
		waitIdle(t, c)
	})
}
