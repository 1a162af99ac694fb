package suspend

import (
	"syscall"
	"time"
	"unsafe"
)

// systemReader reads CLOCK_BOOTTIME − CLOCK_MONOTONIC, which grows by the
// time the machine spends suspended and by nothing else.
var systemReader reader = readBoottime

const (
	clockMonotonic = 1
	clockBoottime  = 7 // Linux 2.6.39 and later
)

// maxGap is the spread of the two CLOCK_MONOTONIC readings that bracket a
// CLOCK_BOOTTIME reading beyond which readBoottime tries again: the calls
// were preempted. An unhurried bracket is under a few microseconds.
const maxGap = 50 * time.Microsecond

// readBoottime returns bounds on CLOCK_BOOTTIME − CLOCK_MONOTONIC. It reads
// CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_MONOTONIC: the CLOCK_BOOTTIME
// reading is some CLOCK_MONOTONIC time between the two, plus the
// difference, so the difference lies between boot − mono2 and boot − mono1.
// It keeps the narrowest of a few brackets, stopping at the first narrower
// than maxGap.
func readBoottime() (lo, hi time.Duration, ok bool) {
	best := time.Duration(-1)
	for range 8 {
		m1, ok1 := clockGettime(clockMonotonic)
		b, ok2 := clockGettime(clockBoottime)
		m2, ok3 := clockGettime(clockMonotonic)
		if !ok1 || !ok2 || !ok3 {
			return 0, 0, false
		}
		if gap := m2 - m1; best < 0 || gap < best {
			best, lo, hi = gap, b-m2, b-m1
		}
		if best <= maxGap {
			break
		}
	}
	return lo, hi, true
}

func clockGettime(clock uintptr) (time.Duration, bool) {
	var ts syscall.Timespec
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano()), errno == 0
}
