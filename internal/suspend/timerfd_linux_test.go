package suspend

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests run Process's timers on the real clock. No test can suspend
// the machine, so they check that the timerfd serves as a timer at all;
// the logic around it is tested on a Fake. Lateness bounds are loose: a
// loaded machine delays goroutines.
const slack = 100 * time.Millisecond

// Process waits on a timerfd, in the runtime's network poller rather than
// in a blocking read.
func TestProcessWaitsOnTimerfd(t *testing.T) {
	stop := Process.AfterFunc(time.Hour, func() { t.Error("stopped timer fired") })
	Process.mu.Lock()
	_, boot := Process.alarm.(*bootAlarm)
	Process.mu.Unlock()
	if !boot {
		t.Errorf("Process's alarm is %T, want a timerfd", Process.alarm)
	}
	state := ""
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(time.Millisecond) {
		if state = runnerState(); state == "IO wait" {
			break
		}
	}
	if state != "IO wait" {
		t.Errorf("runner goroutine is in state %q, want IO wait", state)
	}
	if !stop() {
		t.Fatal("stop = false before the time")
	}
	waitIdle(t, Process)
	if state := runnerState(); state != "" {
		t.Fatalf("runner goroutine still there, in state %q, with no timer pending", state)
	}
}

// runnerState returns the state of a goroutine running Counter.run, or ""
// if there is none.
func runnerState() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if !strings.Contains(g, "suspend.(*Counter).run(") {
			continue
		}
		header, _, _ := strings.Cut(g, "\n")
		_, state, _ := strings.Cut(header, "[")
		state, _, _ = strings.Cut(state, "]")
		state, _, _ = strings.Cut(state, ",")
		return state
	}
	return ""
}

// TestProcessTimersFireOnTime: never early, and on time. A busy machine
// can delay any one firing (CI's -race pass saw 115 ms and 242 ms at a
// load of 17 on 2 cores), so a timer gets a few tries to fire within
// slack; a timer that fires early, or late every time, fails.
func TestProcessTimersFireOnTime(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, 0, time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
		var lates []time.Duration
		for range 5 {
			start := Process.Now()
			fired := make(chan time.Time, 1)
			Process.AfterFunc(d, func() { fired <- Process.Now() })
			late := (<-fired).Sub(start) - max(d, 0)
			if late < 0 {
				t.Fatalf("AfterFunc(%v) fired %v before its time", d, -late)
			}
			lates = append(lates, late)
			if late <= slack {
				break
			}
		}
		if late := lates[len(lates)-1]; late > slack {
			t.Errorf("AfterFunc(%v) fired late every time (%v), want within %v", d, lates, slack)
		}
	}
	waitIdle(t, Process)
}

// A timer earlier than the one the timerfd is set for re-arms it.
func TestProcessEarlierTimerRearms(t *testing.T) {
	stop := Process.AfterFunc(time.Hour, func() { t.Error("stopped timer fired") })
	time.Sleep(5 * time.Millisecond) // the runner is waiting for the hour
	start := Process.Now()
	fired := make(chan time.Time, 1)
	Process.AfterFunc(20*time.Millisecond, func() { fired <- Process.Now() })
	select {
	case at := <-fired:
		if late := at.Sub(start) - 20*time.Millisecond; late < 0 || late > slack {
			t.Errorf("fired %v after its time, want within %v", late, slack)
		}
	case <-time.After(10 * time.Second):
		t.Error("an earlier timer did not fire while a later one was pending")
	}
	stop()
	waitIdle(t, Process)
}

// Many timers, some stopped: each of the others fires once, none before
// its time, and the runner exits when they are done.
func TestProcessManyTimers(t *testing.T) {
	const n = 300
	var calls, stopped atomic.Int32
	var early atomic.Int32
	var mu sync.Mutex
	var worst time.Duration
	var wg sync.WaitGroup
	for i := range n {
		d := time.Duration(i%60) * time.Millisecond
		target := Process.Now().Add(d)
		wg.Add(1)
		stop := Process.AfterFunc(d, func() {
			defer wg.Done()
			late := Process.Now().Sub(target)
			if late < 0 {
				early.Add(1)
			}
			mu.Lock()
			worst = max(worst, late)
			mu.Unlock()
			calls.Add(1)
		})
		if i%3 == 0 && stop() {
			stopped.Add(1)
			wg.Done()
		}
	}
	wg.Wait()
	if got := calls.Load() + stopped.Load(); got != n {
		t.Errorf("%d calls + %d stops = %d, want %d", calls.Load(), stopped.Load(), got, n)
	}
	if early.Load() > 0 {
		t.Errorf("%d timers fired before their time", early.Load())
	}
	t.Logf("%d fired, %d stopped, latest %v after its time", calls.Load(), stopped.Load(), worst)
	waitIdle(t, Process)
}

// Setting the timerfd discards an expiry not yet read, so a wait after it
// is for the new setting only.
func TestBootAlarmSetClearsUnreadExpiry(t *testing.T) {
	a, err := newBootAlarm(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	a.wake()
	time.Sleep(time.Millisecond)
	a.set(time.Now().Add(time.Hour))
	var buf [8]byte
	if _, err := unix.Read(a.fd, buf[:]); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("read after re-arming an expired timerfd: %v, want EAGAIN", err)
	}
}

// A timerfd that cannot be set wakes the runner, which carries on with Go
// timers.
func TestBrokenAlarmFallsBack(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := newCounter(readBoottime, false, func(now func() time.Time) alarm { return &bootAlarm{now: now, fd: -1, f: r} })
	start := c.Now()
	fired := make(chan time.Time, 1)
	c.AfterFunc(20*time.Millisecond, func() { fired <- c.Now() })
	select {
	case at := <-fired:
		if late := at.Sub(start) - 20*time.Millisecond; late < 0 || late > slack {
			t.Errorf("fired %v after its time, want within %v", late, slack)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a timer did not fire after its timerfd broke")
	}
	waitIdle(t, c)
}
