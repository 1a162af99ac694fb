//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A runner is what lock, once and elect share to run the user's command
// under a hold: the command line, found before anything else; the
// handling of signals (see supervisor); the session; and each run of the
// command, from its start with the environment the dsync command adds to
// its end, by itself or stopped when the hold ends. What is left to each
// command is its policy: what it holds, the environment it adds, what the
// end of a hold means and the exit status that says so.
type runner struct {
	name  string // the dsync command, in messages: "lock"
	r     *reporter
	grace time.Duration // between SIGTERM and SIGKILL (--grace)
	argv  []string      // the user's command line; empty: none
	path  string        // argv[0], found

	cancel context.CancelCauseFunc
	sup    *supervisor
}

// newRunner finds argv's command (a typo is reported before any lock is
// taken, with the status a shell would use) and starts handling signals.
// The context it returns ends, with an errSignal cause, when a signal
// that tells dsync to stop arrives while no command runs. When it fails,
// it has said why and code is the exit status. Call close when done.
func newRunner(name string, r *reporter, grace time.Duration, argv []string) (rn *runner, ctx context.Context, code int, ok bool) {
	rn = &runner{name: name, r: r, grace: grace, argv: argv}
	if len(argv) > 0 {
		path, code, err := lookCommand(argv[0])
		if err != nil {
			return nil, nil, fail(name, code, err), false
		}
		rn.path = path
	}
	ctx, rn.cancel = context.WithCancelCause(context.Background())
	rn.sup = supervise(rn.cancel, grace, r)
	return rn, ctx, 0, true
}

// close stops handling signals, and ends the context newRunner returned.
func (rn *runner) close() {
	rn.sup.stop()
	rn.cancel(nil)
}

// open opens the command's session, with a lease of ttl. When it fails,
// it has said why and code is the exit status: 2 without a server
// given, 128+N when signal N ended the wait, else 125.
func (rn *runner) open(ctx context.Context, g *globals, ttl time.Duration) (s *session, code int, ok bool) {
	s, err := g.openSession(ctx, rn.r.logger(), ttl)
	var ce errClient
	switch {
	case errors.As(err, &ce):
		return nil, fail(rn.name, exitDsync, ce.err), false
	case err != nil:
		return nil, failOrSignal(ctx, rn.name, err), false
	}
	return s, 0, true
}

// start starts the command with dsync's environment and env, unless ctx
// has ended or a signal has arrived (the error is then the context's
// cause, an errSignal for a signal). From then on, signals go to the
// command.
func (rn *runner) start(ctx context.Context, env []string, extra ...*os.File) (*job, error) {
	return rn.sup.start(ctx, rn.path, rn.argv, env, extra...)
}

// startStatus is the exit status when the command did not start: 128+N
// when signal N came first, else 126, said on stderr.
func (rn *runner) startStatus(err error) int {
	var sig errSignal
	if errors.As(err, &sig) {
		return sig.status()
	}
	return fail(rn.name, exitNoExec, err)
}

// wait waits until the command exits (true) or end is closed: the hold
// ended, and the command, still running, is the caller's to stop.
func (rn *runner) wait(j *job, end <-chan struct{}) (exited bool) {
	select {
	case <-j.done:
		rn.sup.finished()
		return true
	case <-end:
		return false
	}
}

// stop ends the command: SIGTERM, SIGKILL --grace later if it is still
// running, which it says. From then on a signal is for dsync itself,
// not for a command that can no longer receive it.
func (rn *runner) stop(j *job) {
	if j.stop(rn.grace) {
		rn.r.say("command killed: it did not exit within %v of SIGTERM", rn.grace)
	}
	rn.sup.finished()
}

// stopLost says why the hold ended, as format and args, adding that the
// command is being stopped, and stops it.
func (rn *runner) stopLost(j *job, format string, args ...any) {
	rn.r.say("%s; stopping the command (SIGTERM, SIGKILL after %v)", fmt.Sprintf(format, args...), rn.grace)
	rn.stop(j)
}

// signalStatus is the exit status after ctx was cancelled by a signal.
func signalStatus(ctx context.Context) int {
	var sig errSignal
	if errors.As(context.Cause(ctx), &sig) {
		return sig.status()
	}
	return 128 + int(syscall.SIGTERM)
}

// failOrSignal reports err, unless a signal ended the wait.
func failOrSignal(ctx context.Context, cmd string, err error) int {
	if ctx.Err() != nil {
		return signalStatus(ctx)
	}
	code := exitDsync
	if isUsage(err) {
		code = exitUsage
	}
	return fail(cmd, code, err)
}
