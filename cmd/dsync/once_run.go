//go:build unix

package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// errCmdFailed carries a failed command's exit status out of Once.Do.
type errCmdFailed struct{ status int }

func (e errCmdFailed) Error() string { return "the command exited " + strconv.Itoa(e.status) }

// A onceRun is dsync once's turn at running the command in Once.Do, and
// what came of it.
type onceRun struct {
	rn   *runner
	s    *session
	name string

	// waited ends the wait for the lock when --wait runs out, with cause
	// errWaited; waitTimer, nil without --wait, does that.
	waited    context.Context
	waitTimer *time.Timer

	ran    bool // the command was started, or tried
	status int  // its exit status, as a shell would say it
	lost   bool // the lock was lost while it ran
}

// do runs the command to success once, unless it is done elsewhere
// meanwhile. --wait (wait > 0) bounds the wait for the lock, not the
// command's run.
func (o *onceRun) do(ctx context.Context, once *dsync.Once, wait time.Duration) error {
	waited, stopWait := context.WithCancelCause(ctx)
	defer stopWait(nil)
	o.waited = waited
	if wait > 0 {
		o.waitTimer = time.AfterFunc(wait, func() { stopWait(errWaited) })
	}
	return once.Do(waited, o.run)
}

// run runs the command while Once.Do holds the lock: ctx ends when the
// lock is lost.
func (o *onceRun) run(ctx context.Context) error {
	if o.waitTimer != nil && !o.waitTimer.Stop() {
		return context.Cause(o.waited) // --wait ran out just now
	}
	o.ran = true
	token, _ := dsync.TokenOf(ctx)
	env := []string{"DSYNC_ONCE=" + o.name, "DSYNC_TOKEN=" + strconv.FormatUint(token, 10)}
	j, err := o.rn.start(ctx, env)
	if err != nil {
		o.status = exitNoExec
		var sig errSignal
		if errors.As(err, &sig) {
			o.status = sig.status()
		}
		return err
	}
	o.rn.r.info("once %q: running %s (pid %d, token %d)", o.name, o.rn.argv[0], j.cmd.Process.Pid, token)
	if !o.rn.wait(j, ctx.Done()) {
		o.stop(ctx, j, token)
		return context.Cause(ctx)
	}
	o.status = j.status
	if o.status != 0 {
		return errCmdFailed{o.status}
	}
	return nil
}

// stop stops the command when ctx, its hold's, has ended, saying so if
// the lock was lost.
func (o *onceRun) stop(ctx context.Context, j *job, token uint64) {
	o.lost = errors.Is(context.Cause(ctx), dsync.ErrLost)
	if o.lost {
		o.rn.r.mute()
		o.rn.stopLost(j, "once %q (token %d): lock lost", o.name, token)
	} else {
		o.rn.stop(j)
	}
	o.status = j.status
}

// exit is dsync once's exit status after Once.Do returned err, saying
// what happened; wait is --wait.
func (o *onceRun) exit(ctx context.Context, err error, wait time.Duration) int {
	r := o.rn.r
	var failed errCmdFailed
	switch {
	case err == nil && o.ran:
		r.info("once %q: done", o.name)
		return exitOK
	case err == nil:
		r.info("once %q: done elsewhere", o.name)
		return exitOK
	case errors.As(err, &failed):
		return failed.status
	case o.lost:
		r.say("once %q: command stopped (status %d); exiting %d, lock lost", o.name, o.status, exitLost)
		o.s.abandonConn()
		return exitLost
	case o.ran && o.status == 0 && ctx.Err() == nil:
		// The command succeeded, but its success is unconfirmed.
		r.say("once %q: %v", o.name, oneLine(err))
		return exitLost
	case ctx.Err() != nil:
		return signalStatus(ctx)
	case errors.Is(err, errWaited):
		r.say("once %q: the command did not start within %v", o.name, wait)
		return exitNotLocked
	case o.ran && o.status == exitNoExec:
		return fail("once", exitNoExec, err)
	default:
		return fail("once", exitDsync, err)
	}
}
