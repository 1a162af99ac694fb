package history

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now returns the CLOCK_MONOTONIC reading in nanoseconds. Every process on
// the machine reads the same clock, so timestamps of different workers can
// be compared; it never jumps when the wall clock is set.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("history: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// calibration pairs a time.Time (with its monotonic reading) with the
// CLOCK_MONOTONIC reading taken at the same instant. Go's monotonic clock
// is CLOCK_MONOTONIC on Linux, offset by the process start, so one pair per
// process converts any time.Time that carries a monotonic reading.
type calibration struct {
	t    time.Time
	mono int64
	err  int64 // half the gap between the two CLOCK_MONOTONIC reads around time.Now
}

var base = calibrate()

func calibrate() calibration {
	best := calibration{err: 1 << 62}
	for range 50 {
		a := Now()
		t := time.Now()
		b := Now()
		if (b-a)/2 < best.err {
			best = calibration{t: t, mono: a + (b-a)/2, err: (b - a) / 2}
		}
	}
	return best
}

// Mono converts t, which must carry a monotonic clock reading (time.Now
// and values derived from it with Add do), to CLOCK_MONOTONIC nanoseconds.
// The zero Time converts to 0.
func Mono(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return base.mono + int64(t.Sub(base.t))
}

// CalibrationError is the uncertainty of Mono in this process.
func CalibrationError() time.Duration { return time.Duration(base.err) }
