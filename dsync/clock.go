package dsync

import (
	"time"

	"github.com/go-dsync/dsync/internal/suspend"
)

// Clock is the time source of a Client's lease (WithClock) and of its
// primitives' waits. It only measures elapsed time (deadlines, waits), so
// Now must carry a monotonic reading, as time.Now does; the wall-clock
// part is never used. Elapsed time should include time the machine spends
// suspended, or a hold outlives its lease after a suspend (see Suspend in
// the package documentation). Tests rarely need a Clock of their own:
// testing/synctest fakes the time package that the default clock uses.
//
// It differs from clockcheck.Clock, which a store uses to measure the
// server's clock: that one reads the wall clock (to express an offset)
// and has no timers; this one needs timers (AfterFunc), for the lease's
// deadlines and renewals, and never reads the wall clock.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d. The stop it returns
	// prevents the call if it has not started, and reports whether it did
	// so.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// SystemClock returns the Clock backed by the time package. It counts the
// time the machine spends suspended where Go's monotonic clock does not.
//
// On Linux, Now is time.Now plus the time the machine has been suspended
// since the process started (measured as CLOCK_BOOTTIME − CLOCK_MONOTONIC);
// it keeps time.Now's monotonic reading, so wall-clock changes do not
// affect it, but after a suspend its values are ahead of time.Now's:
// compare them only with each other. AfterFunc's timers count suspended
// time too, and fire at their time whatever the machine did meanwhile: one
// goroutine per process, while any timer is pending, waits on a timerfd of
// CLOCK_BOOTTIME set for the earliest, which the kernel expires at once on
// resume if a suspend carried it past its time. If the process cannot
// create a timerfd (kernels before 3.15), it waits on Go timers instead and
// looks at the clock every second of awake time, so that a timer a suspend
// carried past or near its time fires up to a second late. On other systems
// Now is time.Now and AfterFunc is time.AfterFunc (see the package
// documentation for what they count).
// Inside a testing/synctest bubble, whose time is fake, it is time.Now and
// time.AfterFunc everywhere.
func SystemClock() Clock { return systemClock{suspend.Process} }

type systemClock struct{ c *suspend.Counter }

func (s systemClock) Now() time.Time { return s.c.Now() }

func (s systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return s.c.AfterFunc(d, f)
}
