//go:build unix

package serverproc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A Proc is a server process started by [Start]. No goroutine waits for
// it: [Proc.ExitedNow] and [Proc.Kill] reap it. Its methods are for one
// goroutine at a time.
type Proc struct {
	cmd    *exec.Cmd
	reaped bool
}

// Start starts cmd. The caller reaps it by [Proc.Kill] or [Proc.Stop],
// not by cmd.Wait.
func Start(cmd *exec.Cmd) (*Proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Proc{cmd: cmd}, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// ExitedNow reaps the process if it has exited, without waiting, and says
// whether it is gone.
func (p *Proc) ExitedNow() bool {
	if !p.reaped {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(p.cmd.Process.Pid, &ws, syscall.WNOHANG, nil)
		p.reaped = pid == p.cmd.Process.Pid || err == syscall.ECHILD
	}
	return p.reaped
}

// Kill sends SIGKILL and reaps the process; a no-op once it is reaped.
func (p *Proc) Kill() {
	if !p.reaped {
		_ = p.cmd.Process.Kill()
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.cmd.Process.Pid, &ws, 0, nil)
		p.reaped = true
	}
}

// Stop sends sig (the server's own shutdown), waits up to grace for the
// process to exit, then kills it; a no-op once it is reaped.
func (p *Proc) Stop(sig os.Signal, grace time.Duration) {
	if p.reaped {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	deadline := time.Now().Add(grace)
	for !p.ExitedNow() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	p.Kill()
}

// AwaitReady asks ready every 100 ms until it says yes. It fails if the
// process exits first, or, after killing it, when timeout has passed;
// the error names the server name and carries the end of its log at
// logPath.
func (p *Proc) AwaitReady(name, logPath string, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if p.ExitedNow() {
			return fmt.Errorf("%s exited before accepting connections; log:\n%s", name, Tail(logPath, logTail))
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("%s did not accept connections within %d s; log:\n%s", name, timeout/time.Second, Tail(logPath, logTail))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logTail is how much of a server's log AwaitReady's errors carry.
const logTail = 8 << 10
