package clockcheck

import "time"

// Clock is the local time source a measurement is taken with.
//
// Wall may be off by any amount and may jump in either direction at any time;
// it is used only to express a sample's offset. Monotonic must never jump:
// round-trip times and the time elapsed since a sample are measured with it,
// which is what keeps an [Estimator] correct while Wall is wrong.
type Clock interface {
	// Wall returns the local wall-clock time. Any monotonic clock reading
	// it carries is ignored.
	Wall() time.Time
	// Monotonic returns the time elapsed since an arbitrary fixed origin.
	// It never decreases and never jumps.
	Monotonic() time.Duration
}

// SystemClock returns the clock of this process: [time.Now] for Wall, and the
// runtime's monotonic clock (time.Since a fixed instant) for Monotonic.
//
// On Linux, Go's monotonic clock does not advance while the machine is
// suspended; see the package documentation for what that means for an
// [Estimator].
func SystemClock() Clock { return systemClock{} }

// processStart is the origin of systemClock.Monotonic. Only its monotonic
// reading matters.
var processStart = time.Now()

type systemClock struct{}

// Wall strips the monotonic reading, so that durations computed from Wall
// readings really are wall-clock differences, as the interface promises.
func (systemClock) Wall() time.Time { return time.Now().Round(0) }

func (systemClock) Monotonic() time.Duration { return time.Since(processStart) }
