package pgserve

import "syscall"

// setPostgresPdeathsig makes the kernel send PostgreSQL SIGQUIT (its
// immediate shutdown, which ends its sessions and frees its shared memory)
// when the test binary dies. The kernel clears the setting when the
// credentials change, and Go sets it after changing them, so it holds for
// a server run as another user too.
func setPostgresPdeathsig(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGQUIT }
