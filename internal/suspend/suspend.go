// Package suspend counts the time the machine spends suspended, which Go's
// monotonic clock misses on Linux, and provides a clock and timers that
// include it.
//
// On Linux, CLOCK_MONOTONIC — the clock behind time.Now's monotonic reading
// and behind every Go timer — stops while the machine is suspended, and
// CLOCK_BOOTTIME does not: their difference grows by the time spent
// suspended, as the kernel measures it, and by nothing else. [Process]
// reads that difference. On other systems it counts
// nothing, and its clock and timers are the time package's.
package suspend

import (
	"sync"
	"sync/atomic"
	"time"
)

// Step is how often, in awake time, a Counter with pending timers checks
// whether the machine has been suspended; a timer that a suspend carried
// past its time fires within about one Step of the resume.
const Step = time.Second

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
	step   time.Duration
	base   time.Duration // hi of the reading taken at creation
	off    atomic.Int64  // suspended time counted so far; never decreases

	mu      sync.Mutex
	pending map[*timer]struct{}
	idle    chan struct{} // non-nil while a watcher goroutine runs
}

// Process is the Counter of this process. On Linux it reads
// CLOCK_BOOTTIME − CLOCK_MONOTONIC; elsewhere it counts nothing.
var Process = newCounter(systemReader, true, Step)

func newCounter(read reader, system bool, step time.Duration) *Counter {
	c := &Counter{system: system, step: step}
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
// A Go timer counts only awake time, so c re-arms the timers it has
// pending when it sees the machine was suspended: one goroutine per
// Counter checks every [Step] while any timer is pending, and exits when
// none is. A timer that a suspend carried past its time therefore fires
// within about a Step of the resume; the others are moved earlier by the
// suspended time.
func (c *Counter) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	if !c.counts(time.Now()) {
		return time.AfterFunc(d, f).Stop
	}
	t := &timer{c: c, f: f}
	// The watcher may re-arm t as soon as it is added: hold t.mu until
	// t is armed.
	t.mu.Lock()
	defer t.mu.Unlock()
	c.add(t)
	// Reading the clock only now, after adding t, is what makes every
	// suspend count for t: one that this reading misses raises the count
	// after the watcher's last look at it, so the watcher re-arms t.
	t.target = c.Now().Add(d)
	t.t = time.AfterFunc(d, t.fire)
	return t.stop
}

type timerState uint8

const (
	timerPending timerState = iota
	timerFired
	timerStopped
)

// A timer is one AfterFunc of a counting Counter: a Go timer armed for the
// awake time left until target, which the watcher re-arms after a suspend.
type timer struct {
	c      *Counter
	target time.Time // on c's clock
	f      func()

	mu    sync.Mutex
	t     *time.Timer
	state timerState
}

// remaining returns the time left until t.target on c's clock, at least 0.
func (t *timer) remaining() time.Duration {
	return max(t.target.Sub(t.c.Now()), 0)
}

// fire is the Go timer's function: it calls f if target has passed, and
// otherwise re-arms for the rest.
func (t *timer) fire() {
	t.mu.Lock()
	if t.state != timerPending {
		t.mu.Unlock()
		return
	}
	if rem := t.remaining(); rem > 0 {
		t.t.Reset(rem)
		t.mu.Unlock()
		return
	}
	t.state = timerFired
	t.mu.Unlock()
	t.c.remove(t)
	t.f()
}

func (t *timer) stop() bool {
	t.mu.Lock()
	if t.state != timerPending {
		t.mu.Unlock()
		return false
	}
	t.state = timerStopped
	t.t.Stop()
	t.mu.Unlock()
	t.c.remove(t)
	return true
}

// rearm sets the Go timer to the time left on c's clock, which a suspend
// has shortened.
func (t *timer) rearm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == timerPending {
		t.t.Reset(t.remaining())
	}
}

// add registers t with the watcher, starting the watcher if none runs.
func (c *Counter) add(t *timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = make(map[*timer]struct{})
	}
	c.pending[t] = struct{}{}
	if c.idle == nil {
		c.idle = make(chan struct{}, 1)
		// The count as of now, before t reads the clock: a suspend that
		// t's own reading misses raises the count above this.
		go c.watch(c.idle, time.Duration(c.off.Load()))
	}
}

// remove unregisters t and tells the watcher when none is left, so that it
// exits now rather than at its next check.
func (c *Counter) remove(t *timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, t)
	if len(c.pending) == 0 && c.idle != nil {
		select {
		case c.idle <- struct{}{}:
		default:
		}
	}
}

// watch checks the count every step while timers are pending; when it has
// grown since the last check, it re-arms them all. last is the count before
// any pending timer read the clock.
func (c *Counter) watch(idle chan struct{}, last time.Duration) {
	tick := time.NewTicker(c.step)
	defer tick.Stop()
	var batch []*timer
	for {
		select {
		case <-tick.C:
		case <-idle:
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.idle = nil
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()

		off := c.Elapsed()
		if off == last {
			continue
		}
		last = off
		// Every timer added before this snapshot either read the clock
		// after the count reached off, or is re-armed here.
		c.mu.Lock()
		batch = batch[:0]
		for t := range c.pending {
			batch = append(batch, t)
		}
		c.mu.Unlock()
		for _, t := range batch {
			t.rearm()
		}
		clear(batch)
	}
}

// Fake returns a Counter whose suspended time a test sets: suspend(d)
// adds d to what it reads, as a resume after d of sleep would. Unlike
// [Process] it counts inside testing/synctest bubbles too; its watcher
// checks every step. Use one Fake in one bubble at a time.
func Fake(step time.Duration) (c *Counter, suspend func(d time.Duration)) {
	var total atomic.Int64
	read := func() (lo, hi time.Duration, ok bool) {
		s := time.Duration(total.Load())
		return s, s, true
	}
	return newCounter(read, false, step), func(d time.Duration) { total.Add(int64(d)) }
}
