//go:build !linux

package ferret

import "syscall"

// sysProcAttr: elsewhere the server exits when its stdin closes.
func sysProcAttr() *syscall.SysProcAttr { return nil }
