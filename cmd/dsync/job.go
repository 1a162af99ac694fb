//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A job is the user's command, run by lock, once and elect (see runner).
type job struct {
	cmd *exec.Cmd
	// group: the command leads a process group of its own, and every
	// signal goes to the whole group, so that a lost lock stops what the
	// command started too. Not in a terminal's foreground, where the
	// command shares dsync's group so it can read the terminal (and gets
	// the terminal's Ctrl-C directly).
	group  bool
	done   chan struct{} // closed when the command has exited
	status int           // exit status, 128+N for signal N; valid after done
}

// lookCommand finds the command before any lock is taken, so that a typo
// is reported at once, with the exit status a shell would use.
func lookCommand(name string) (path string, code int, err error) {
	path, err = exec.LookPath(name)
	switch {
	case err == nil:
		return path, 0, nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", exitNotFound, fmt.Errorf("%s: command not found", name)
	default:
		return "", exitNoExec, err
	}
}

// startJob starts argv (argv[0] found at path) with dsync's stdin, stdout
// and stderr, extra environment variables, and extra open files (the
// first as descriptor 3).
func startJob(path string, argv, env []string, group bool, extra ...*os.File) (*job, error) {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = extra
	setProcAttr(cmd, group)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	j := &job{cmd: cmd, group: group, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		j.status = exitStatus(cmd.ProcessState, err)
		close(j.done)
	}()
	return j, nil
}

// exitStatus is the status a shell would report: the exit code, or 128+N
// when signal N ended the process.
func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return exitNoExec
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signal sends sig to the command (to its group, if it has one). A job
// that has exited is not signalled: its process id may be reused.
func (j *job) signal(sig syscall.Signal) {
	select {
	case <-j.done:
		return
	default:
	}
	signalProcess(j.cmd.Process, sig, j.group)
}

// stop ends the command: SIGTERM, then SIGKILL if it has not exited after
// grace. In a process group of its own, whatever the command started and
// left running is killed too. It returns once the command has exited,
// reporting whether it had to be killed.
func (j *job) stop(grace time.Duration) (killed bool) {
	j.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-j.done:
	case <-t.C:
		j.signal(syscall.SIGKILL)
		killed = true
		<-j.done
	}
	if j.group {
		// The group outlives its leader while members remain; none may
		// keep working without the lock.
		signalGroup(j.cmd.Process.Pid, syscall.SIGKILL)
	}
	return killed
}
