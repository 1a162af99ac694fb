//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// A job is the user's command, run by lock and elect.
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
// and stderr and extra environment variables.
func startJob(path string, argv, env []string, group bool) (*job, error) {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
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

// The signals dsync passes on to the command, or that end dsync while no
// command runs.
var (
	forwarded   = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
	terminating = map[os.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: true, syscall.SIGHUP: true, syscall.SIGQUIT: true}
	// fromTerminal are the signals a terminal sends to its whole
	// foreground process group: a command sharing dsync's group already
	// got them.
	fromTerminal = map[os.Signal]bool{syscall.SIGINT: true, syscall.SIGQUIT: true, syscall.SIGHUP: true}
	// fromKeyboard are those a user types.
	fromKeyboard = map[os.Signal]bool{syscall.SIGINT: true, syscall.SIGQUIT: true}
)

// errSignal is the cause of a context cancelled by a signal.
type errSignal struct{ sig syscall.Signal }

func (e errSignal) Error() string { return "interrupted by " + e.sig.String() }

// status is the exit status for dying of the signal.
func (e errSignal) status() int { return 128 + int(e.sig) }

// A supervisor passes signals dsync receives on to the running job, or,
// while no job runs, cancels the context dsync waits under. A job that is
// still running grace after a terminating signal was passed on to it is
// killed (SIGKILL): it must not go on holding the lock after dsync was
// told to stop.
type supervisor struct {
	group bool // jobs get a process group of their own
	grace time.Duration
	r     *reporter

	mu      sync.Mutex
	job     *job
	killing bool // the job's SIGKILL timer runs
	cancel  context.CancelCauseFunc

	sigs chan os.Signal
	done chan struct{}
}

// supervise starts handling signals. Call stop when done.
func supervise(cancel context.CancelCauseFunc, grace time.Duration, r *reporter) *supervisor {
	s := &supervisor{group: !inForeground(), grace: grace, r: r, cancel: cancel, sigs: make(chan os.Signal, 4), done: make(chan struct{})}
	signal.Notify(s.sigs, forwarded...)
	go s.loop()
	return s
}

func (s *supervisor) loop() {
	for {
		select {
		case <-s.done:
			return
		case sig := <-s.sigs:
			s.handle(sig.(syscall.Signal))
		}
	}
}

func (s *supervisor) handle(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job == nil {
		if terminating[sig] {
			s.cancel(errSignal{sig})
		}
		return
	}
	if s.group || !fromTerminal[sig] {
		s.job.signal(sig)
	}
	// Ctrl-C and Ctrl-\ typed at the terminal dsync shares with the job
	// are the user's to repeat; anything else that tells dsync to stop
	// ends the job within the grace period.
	if terminating[sig] && (s.group || !fromKeyboard[sig]) && !s.killing {
		s.killing = true
		go s.killAfterGrace(s.job, sig)
	}
}

// killAfterGrace kills j if it has not exited grace after sig.
func (s *supervisor) killAfterGrace(j *job, sig syscall.Signal) {
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case <-j.done:
	case <-t.C:
		s.r.say("command still running %v after %s; killing it (SIGKILL)", s.grace, sig)
		j.signal(syscall.SIGKILL)
		<-j.done
		if j.group {
			signalGroup(j.cmd.Process.Pid, syscall.SIGKILL) // and what it left behind
		}
	}
}

// start starts a job unless ctx has ended (a signal arrived), atomically
// with respect to signal handling.
func (s *supervisor) start(ctx context.Context, path string, argv, env []string) (*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	j, err := startJob(path, argv, env, s.group)
	if err != nil {
		return nil, err
	}
	s.job = j
	return j, nil
}

// finished notes that the job has exited.
func (s *supervisor) finished() {
	s.mu.Lock()
	s.job, s.killing = nil, false
	s.mu.Unlock()
}

func (s *supervisor) stop() {
	signal.Stop(s.sigs)
	close(s.done)
}
