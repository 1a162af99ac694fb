//go:build !linux

package suspend

// systemReader is nil: outside Linux the standard library offers no clock
// that counts suspended time where Go's monotonic clock does not, so
// Process counts nothing.
var systemReader reader
