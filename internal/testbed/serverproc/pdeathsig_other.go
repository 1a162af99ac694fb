//go:build !linux

package serverproc

import (
	"os/exec"
	"syscall"
)

// SetPdeathsig is a no-op outside Linux: a server started here outlives
// a test binary that crashed, unless it watches for that itself.
func SetPdeathsig(*exec.Cmd, syscall.Signal) {}
