//go:build unix && !linux

package pgserve

import "syscall"

// setPostgresPdeathsig is a no-op outside Linux: a PostgreSQL started
// here outlives a test binary that crashed.
func setPostgresPdeathsig(*syscall.SysProcAttr) {}
