package harness

import "syscall"

// childSysProcAttr makes the kernel kill a child if the scenario dies.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
