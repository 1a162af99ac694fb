package sqlserve

import "syscall"

// setPdeathsig makes the kernel kill the server when the test binary
// dies, so that a crashed test leaves no server behind.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
