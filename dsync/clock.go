package dsync

import (
	"time"

	"github.com/go-dsync/dsync/internal/suspend"
)

// systemClock is a Client's clock, unless a test sets one (clienthook's
// Settings.Clock): the time package's, counting the time the machine
// spends suspended where Go's monotonic clock does not. The clock only
// measures elapsed time (deadlines, waits, the lease): elapsed time must
// include time the machine spends suspended, or a hold outlives its lease
// after a suspend (see Suspend in the package documentation).
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
type systemClock struct{ c *suspend.Counter }

// theSystemClock is the clock of every Client no test set one for.
var theSystemClock = systemClock{suspend.Process}

func (s systemClock) Now() time.Time { return s.c.Now() }

func (s systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return s.c.AfterFunc(d, f)
}
