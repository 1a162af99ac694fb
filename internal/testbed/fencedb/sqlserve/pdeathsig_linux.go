package sqlserve

import "syscall"

// setPdeathsig makes the kernel kill the server when the test binary
// dies, so that a crashed test leaves no server behind. Go sets it after
// the child's credentials change, so it holds for a server started as
// another user; the server must not change them again itself.
func setPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
