//go:build !linux

package mongotest

import (
	"os/exec"
	"syscall"
)

// setPdeathsig is a no-op outside Linux; the child still exits when its
// stdin reaches EOF, i.e. when the parent dies.
func setPdeathsig(*exec.Cmd, syscall.Signal) {}
