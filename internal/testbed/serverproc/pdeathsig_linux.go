package serverproc

import (
	"os/exec"
	"syscall"
)

// SetPdeathsig makes the kernel send sig to cmd's process when the test
// binary dies, so that a crashed test leaves no server behind. Call it
// after setting cmd.SysProcAttr's other fields, if any. The kernel clears
// the setting when a process's credentials change, and Go sets it after
// changing them, so it holds for a server started as another user
// (SysProcAttr.Credential); the server must not change them again itself.
//
// Caveat (golang/go#27505): the signal is sent when the OS thread that
// started the process exits. Go ends a thread only when a goroutine
// locked to it by runtime.LockOSThread exits without unlocking; tests
// must not do that while a server runs, or it may get the signal early.
func SetPdeathsig(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
}
