package ferret

import "syscall"

// sysProcAttr makes the kernel kill the server if the benchmark dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
