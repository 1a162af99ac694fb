//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd, group bool) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = group
	setParentDeathSignal(cmd, syscall.SIGTERM)
}

func signalProcess(p *os.Process, sig syscall.Signal, group bool) {
	if group {
		signalGroup(p.Pid, sig)
		return
	}
	_ = p.Signal(sig)
}

func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// setDemoProcAttr keeps a demo candidate out of the terminal's process
// group (the demo handles Ctrl-C and kills it) and has it killed if the
// demo dies.
func setDemoProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd, syscall.SIGKILL)
}
