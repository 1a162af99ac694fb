// Package suspend counts the time the machine spends suspended, which Go's
// monotonic clock misses on Linux, and provides a clock and timers that
// include it.
//
// On Linux, CLOCK_MONOTONIC — the clock behind time.Now's monotonic reading
// and behind every Go timer — stops while the machine is suspended, and
// CLOCK_BOOTTIME does not: their difference grows by the time spent
// suspended, as the kernel measures it, and by nothing else. [Process]
// reads that difference. On other systems it counts nothing, and its clock
// and timers are the time package's.
//
// A [Counter]'s timers fire when their time comes on its clock, suspended
// time included, whatever the machine did meanwhile: one whose time passed
// during a suspend fires as soon as the machine resumes, and one whose time
// comes shortly after the resume fires then, not after the time it had left
// in awake time. [Process] waits for them on Linux with a timerfd on
// CLOCK_BOOTTIME, which the kernel expires at its time across a suspend.
// Where it cannot create one (kernels before 3.15 refuse CLOCK_BOOTTIME
// timers, and a process may run out of file descriptors), it falls back to
// Go timers and looks at the clock again every second of awake time while
// timers are pending, so that a suspend makes a timer fire up to a second
// late.
package suspend

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// threshold is the least growth of a reading that raises the count. Real
// suspends last seconds; smaller growth is not worth an atomic write.
const threshold = time.Millisecond

// A reader returns bounds on the time the machine has spent suspended,
// from an arbitrary fixed origin: the true value lies in [lo, hi]. ok is
// false if the source cannot be read.
type reader func() (lo, hi time.Duration, ok bool)

// A Counter counts the time the machine has spent suspended since the
// Counter was created, and offers a clock ([Counter.Now]) and timers
// ([Counter.AfterFunc]) that include it.
type Counter struct {
	read reader // nil: nothing is counted
	// system marks the process's Counter, whose source is the real
	// machine: inside a testing/synctest bubble, where time is fake, it
	// leaves time.Now and time.AfterFunc as they are.
	system bool
	// newAlarm returns the alarm a runner waits on, given the Counter's
	// clock.
	newAlarm func(now func() time.Time) alarm
	base     time.Duration // hi of the reading taken at creation
	off      atomic.Int64  // suspended time counted so far; never decreases

	mu      sync.Mutex
	pending timerHeap
	// running says a runner goroutine is serving pending; alarm is the
	// one it waits on, nil when none runs.
	running bool
	alarm   alarm
}

// Process is the Counter of this process. On Linux it reads
// CLOCK_BOOTTIME − CLOCK_MONOTONIC; elsewhere it counts nothing.
var Process = newCounter(systemReader, true, systemAlarm)

func newCounter(read reader, system bool, newAlarm func(now func() time.Time) alarm) *Counter {
	c := &Counter{system: system, newAlarm: newAlarm}
	if read != nil {
		if _, hi, ok := read(); ok {
			c.read, c.base = read, hi
		}
	}
	return c
}

// Elapsed returns the time the machine has spent suspended since c was
// created, as far as c has seen: it reads the source and raises the count
// when the reading exceeds it by more than a millisecond. The count never
// decreases, and never exceeds the true suspended time: it is the reading's
// lower bound minus the creation reading's upper bound.
func (c *Counter) Elapsed() time.Duration {
	if c.read == nil {
		return 0
	}
	cur := time.Duration(c.off.Load())
	lo, _, ok := c.read()
	if !ok {
		return cur
	}
	s := lo - c.base
	for s > cur+threshold {
		if c.off.CompareAndSwap(int64(cur), int64(s)) {
			return s
		}
		cur = time.Duration(c.off.Load())
	}
	return cur
}

// counts reports whether c adjusts t, a reading of time.Now. The process's
// Counter leaves readings without a monotonic clock reading alone: the
// runtime omits it inside a testing/synctest bubble, whose fake time a real
// suspend does not concern (TestProcessInsideBubbleIsPlainTime checks that
// the runtime still does). Outside bubbles time.Now omits it only when the
// wall clock is set outside the years 1885–2157; Go's own comparisons then
// use the wall clock, and Process adds nothing either.
func (c *Counter) counts(t time.Time) bool {
	return c.read != nil && (!c.system || hasMonotonic(t))
}

// hasMonotonic reports whether t carries a monotonic clock reading.
// Round(0) strips it, and == compares it.
func hasMonotonic(t time.Time) bool { return t != t.Round(0) }

// Now returns time.Now plus [Counter.Elapsed]. It keeps time.Now's
// monotonic reading, so comparisons and differences of its values are
// immune to wall-clock changes and count suspended time. Its values are on
// their own scale: compare them with each other, not with time.Now's.
func (c *Counter) Now() time.Time {
	t := time.Now()
	if !c.counts(t) {
		return t
	}
	return t.Add(c.Elapsed())
}

// AfterFunc calls f in its own goroutine once d has passed on c's clock
// ([Counter.Now]), suspended time included. The stop function prevents the
// call if it has not started and reports whether it did so, like
// [time.Timer.Stop].
//
// While any timer is pending, one goroutine per Counter waits on an alarm
// set for the earliest, and fires every timer whose time has come on c's
// clock when it goes off; it exits when none is pending. See the package
// documentation for what the alarm counts on each system.
func (c *Counter) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	if !c.counts(time.Now()) {
		return time.AfterFunc(d, f).Stop
	}
	t := &timer{f: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.target = c.Now().Add(d)
	heap.Push(&c.pending, t)
	switch {
	case !c.running:
		c.running = true
		c.alarm = c.newAlarm(c.Now)
		go c.run()
	case t.index == 0:
		// The runner's alarm is set for a later timer.
		c.alarm.set(t.target)
	}
	return func() bool { return c.stop(t) }
}

// stop removes t if it is pending.
func (c *Counter) stop(t *timer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.pending, t.index)
	if len(c.pending) == 0 {
		// Wake the runner, so that it exits now rather than when the
		// alarm would have gone off. Otherwise an alarm set for a timer
		// no longer pending only wakes it early.
		c.alarm.wake()
	}
	return true
}

// run fires c's timers as their time comes, until none is pending.
func (c *Counter) run() {
	var due []*timer
	for {
		c.mu.Lock()
		now := c.Now()
		for len(c.pending) > 0 && !c.pending[0].target.After(now) {
			due = append(due, heap.Pop(&c.pending).(*timer))
		}
		a := c.alarm
		idle := len(c.pending) == 0
		if idle {
			c.running, c.alarm = false, nil
		} else {
			a.set(c.pending[0].target)
		}
		c.mu.Unlock()

		for i, t := range due {
			go t.f()
			due[i] = nil
		}
		due = due[:0]
		if idle {
			a.close()
			return
		}
		if err := a.wait(); err != nil {
			// The alarm is broken: carry on with Go timers, which at
			// worst fire a poll interval late.
			c.mu.Lock()
			c.alarm = newGoAlarm(c.Now, pollInterval)
			c.mu.Unlock()
			a.close()
		}
	}
}

// Fake returns a Counter whose suspended time a test sets: suspend(d)
// adds d to what it reads, as a resume after d of sleep would. Unlike
// [Process] it counts inside testing/synctest bubbles too. Its timers
// behave as Process's do on Linux: suspend fires at once those whose time
// it carried past, and the others fire when their time comes on the
// counter's clock. Use one Fake in one bubble at a time.
func Fake() (c *Counter, suspend func(d time.Duration)) {
	var total atomic.Int64
	read := func() (lo, hi time.Duration, ok bool) {
		s := time.Duration(total.Load())
		return s, s, true
	}
	c = newCounter(read, false, func(now func() time.Time) alarm { return newGoAlarm(now, 0) })
	return c, func(d time.Duration) {
		total.Add(int64(d))
		c.resumed()
	}
}

// resumed wakes the runner, if any, to look at the clock again: what the
// kernel does for a timerfd on CLOCK_BOOTTIME when the machine resumes.
func (c *Counter) resumed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.alarm != nil {
		c.alarm.wake()
	}
}
