//go:build unix && !linux

package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal does nothing: only Linux can signal a child when
// its parent dies.
func setParentDeathSignal(*exec.Cmd, syscall.Signal) {}

// childProcesses finds nothing: only Linux has /proc to read.
func childProcesses([]int) map[int]int { return nil }
