//go:build !linux

package sqlserve

import "syscall"

// setPdeathsig is a no-op outside Linux: a server started here outlives
// a test binary that crashed.
func setPdeathsig(*syscall.SysProcAttr) {}
