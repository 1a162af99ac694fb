package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel send sig to the command if dsync
// dies (SIGKILL, OOM): its lease then runs out, and the command must not
// go on unprotected.
func setParentDeathSignal(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.SysProcAttr.Pdeathsig = sig
}
