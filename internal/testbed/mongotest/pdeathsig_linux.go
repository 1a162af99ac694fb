package mongotest

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel send sig to the child when the parent
// dies, so a crashed test binary never leaves a server behind: SIGKILL
// for a FerretDB, SIGTERM for the keeper of a Docker deployment, which
// then removes its containers (the child also exits on stdin EOF, which
// covers other platforms).
//
// Caveat (golang/go#27505): Pdeathsig fires when the OS THREAD that forked
// the child exits. Go only ends a thread when a goroutine locked to it with
// runtime.LockOSThread exits without unlocking; tests must not do that while
// a child runs, or the child may be killed early.
func setPdeathsig(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: sig}
}
