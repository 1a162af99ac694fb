//go:build !linux

package harness

import "syscall"

// childSysProcAttr: elsewhere a child exits when its stdin closes.
func childSysProcAttr() *syscall.SysProcAttr { return nil }
