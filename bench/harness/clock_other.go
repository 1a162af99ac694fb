//go:build !linux

package harness

import "time"

// Mono returns the wall clock in nanoseconds. Outside Linux there is no
// cheap machine-wide monotonic clock in the standard library; the wall
// clock is shared by all processes of the machine, which is what the
// cross-process figures need, as long as nothing steps it during a run.
func Mono() int64 { return time.Now().UnixNano() }
