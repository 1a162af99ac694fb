//go:build !linux

package harness

import (
	"syscall"
	"time"
)

// childSysProcAttr: elsewhere a child exits when its stdin closes.
func childSysProcAttr() *syscall.SysProcAttr { return nil }

// ProcessCPU is not measured here.
func ProcessCPU(pid int) (time.Duration, bool) { return 0, false }
