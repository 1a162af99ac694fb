package harness

import (
	"syscall"
	"unsafe"
)

// Mono returns CLOCK_MONOTONIC in nanoseconds: one clock for every process
// on the machine, so timestamps taken in two processes can be subtracted.
func Mono() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	_, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic("clock_gettime(CLOCK_MONOTONIC): " + errno.Error())
	}
	return ts.Nano()
}
