//go:build unix

package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

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
func (s *supervisor) start(ctx context.Context, path string, argv, env []string, extra ...*os.File) (*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	j, err := startJob(path, argv, env, s.group, extra...)
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
