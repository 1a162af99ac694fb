//go:build unix

package mongotest

import (
	"fmt"
	"os"
	"syscall"
)

// sigStop stops p (SIGSTOP) and returns once it has stopped: it runs no
// more until sigCont. A signal is delivered when the kernel next acts for
// p, so without the wait a request could still be answered after Pause
// returned.
func sigStop(p *os.Process) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	exited, err := awaitStopped(p.Pid)
	switch {
	case err != nil:
		return fmt.Errorf("waiting for the SIGSTOP to take: %w", err)
	case exited:
		return fmt.Errorf("the process (pid %d) exited instead of stopping", p.Pid)
	}
	return nil
}

// sigCont lets a stopped p run again (SIGCONT); a running p is unaffected.
func sigCont(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// sigQuit has a Go process write its goroutines to stderr and exit.
func sigQuit(p *os.Process) error { return p.Signal(syscall.SIGQUIT) }
