package clockcheck

import (
	"time"

	"github.com/go-dsync/dsync/internal/suspend"
)

// Clock is the local time source a measurement is taken with.
//
// It differs from dsync.Clock, the time source of a Client's lease: a
// measurement needs the wall clock (a sample's offset is wall time against
// the server's) and no timers, where a lease needs timers and only
// elapsed time.
//
// Wall may be off by any amount and may jump in either direction at any time;
// it is used only to express a sample's offset. Monotonic must advance with
// real time, including time the machine spends suspended, and must never be
// set or stepped: round-trip times and the time elapsed since a sample are
// measured with it, which is what keeps an [Estimator] correct while Wall is
// wrong.
type Clock interface {
	// Wall returns the local wall-clock time. Any monotonic clock reading
	// it carries is ignored.
	Wall() time.Time
	// Monotonic returns the time elapsed since an arbitrary fixed origin.
	// It never decreases and is never stepped.
	Monotonic() time.Duration
}

// SystemClock returns the clock of this process. Its Wall is [time.Now].
// Its Monotonic is the runtime's monotonic clock (time.Since a fixed
// instant). On Linux, Monotonic adds the time the machine has spent
// suspended since the process started, which the runtime's clock does not
// count there (it is measured as CLOCK_BOOTTIME − CLOCK_MONOTONIC). See the
// package documentation for other systems. Inside a testing/synctest bubble
// Monotonic follows the bubble's fake time alone.
func SystemClock() Clock { return systemClock{suspend.Process} }

// processStart is the origin of systemClock.Monotonic. Only its monotonic
// reading matters.
var processStart = time.Now()

type systemClock struct{ c *suspend.Counter }

// Wall strips the monotonic reading, so that durations computed from Wall
// readings really are wall-clock differences, as the interface promises.
func (systemClock) Wall() time.Time { return time.Now().Round(0) }

// Monotonic is the suspend-counting time of s.c since processStart; both
// carry a monotonic reading, so the difference ignores the wall clock.
func (s systemClock) Monotonic() time.Duration { return s.c.Now().Sub(processStart) }
