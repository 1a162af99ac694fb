//go:build !linux

package suspend

import "time"

// systemReader is nil: outside Linux the standard library offers no clock
// that counts suspended time where Go's monotonic clock does not, so
// Process counts nothing.
var systemReader reader

// systemAlarm is never called: Process counts nothing, so its timers are
// the time package's.
func systemAlarm(now func() time.Time) alarm { return newGoAlarm(now, pollInterval) }
