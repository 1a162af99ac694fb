//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/go-dsync/dsync/leader"
)

// exited is how the leader function tells Run that the command exited by
// itself.
type exited struct{ status int }

func (e *exited) Error() string { return "command exited with status " + strconv.Itoa(e.status) }

// An electRun is dsync elect's campaign: it runs the command in each term
// this process leads.
type electRun struct {
	name string
	rn   *runner
	e    *leader.Election
	term leader.Info // set by OnElected, on the goroutine that calls Run
	// progress: the command reports progress (--progress), on a pipe.
	progress bool
}

// options are the Election's options the flags ask for, with the hook
// that records each term.
func (el *electRun) options(f electFlags, r *reporter) []leader.Option {
	opts := []leader.Option{
		leader.WithVersion(f.version), leader.WithLogger(r.logger()),
		leader.OnElected(func(info leader.Info) { el.term = info }),
	}
	if f.progress > 0 {
		el.progress = true
		opts = append(opts, leader.WithProgressDeadline(f.progress))
	}
	if f.priority != 0 {
		opts = append(opts, leader.WithPriority(f.priority))
	}
	if f.preempt >= 0 {
		opts = append(opts, leader.WithPreemption(f.preempt))
	}
	if f.versions {
		opts = append(opts, leader.WithVersionRule(nil))
	}
	if f.ttl/3 > maxHeartbeat {
		// The heartbeat is a third of the TTL by default; dsync status
		// lists members seen within three default heartbeats.
		opts = append(opts, leader.WithHeartbeatInterval(maxHeartbeat))
	}
	return opts
}

// lead is one term, lctx's: it runs the command, or without one leads
// until the term ends. lctx ends with the term: leadership lost, or
// ctx, the campaign's, ended.
func (el *electRun) lead(ctx, lctx context.Context) error {
	if len(el.rn.argv) == 0 {
		el.leadAlone(ctx, lctx)
		return nil
	}
	rn := el.rn
	env := []string{"DSYNC_ELECTION=" + el.name, "DSYNC_TOKEN=" + strconv.FormatUint(el.term.Token, 10)}
	var pipe *progressPipe
	if el.progress {
		var err error
		if pipe, err = newProgressPipe(); err != nil {
			return err
		}
		env = append(env, pipe.env())
	}
	j, err := rn.start(lctx, env, pipe.files()...)
	if err != nil {
		pipe.discard()
		if lctx.Err() != nil {
			return nil // lost, or a signal arrived: Run knows which
		}
		return err
	}
	defer rn.sup.finished()
	if pipe != nil {
		pipe.watch(lctx)
		defer pipe.close()
	}
	rn.r.say("leading %q (term %d); running %s (pid %d)", el.name, el.term.Token, rn.argv[0], j.cmd.Process.Pid)
	if rn.wait(j, lctx.Done()) {
		return &exited{j.status}
	}
	if ctx.Err() != nil {
		// Signals go to the running command rather than to ctx, so
		// this is only a safety net: stop the command as for a loss.
		j.stop(rn.grace)
		return nil
	}
	rn.stopLost(j, "leadership of %q lost (term %d): %s", el.name, el.term.Token, lossWhy(lctx))
	rn.r.say("command stopped (status %d); campaigning again for %q", j.status, el.name)
	standingBy(ctx, rn.r, el.e)
	return nil
}

// leadAlone leads until the term ends, without a command: dsync elect
// NAME prints the term's token, and campaigns again after a loss.
func (el *electRun) leadAlone(ctx, lctx context.Context) {
	r := el.rn.r
	fmt.Printf("%d\n", el.term.Token)
	r.say("leading %q (term %d) until interrupted", el.name, el.term.Token)
	<-lctx.Done()
	if ctx.Err() == nil {
		r.say("leadership of %q lost (term %d): its lease could no longer be guaranteed; campaigning again", el.name, el.term.Token)
	}
}

// exit is dsync elect's exit status after the campaign ended with err.
func (el *electRun) exit(ctx context.Context, err error) int {
	var done *exited
	var perr *os.PathError
	switch {
	case errors.As(err, &done):
		el.rn.r.info("command exited with status %d; resigned from %q", done.status, el.name)
		return done.status
	case ctx.Err() != nil && len(el.rn.argv) == 0:
		return exitOK // interrupted, as asked
	case ctx.Err() != nil:
		return signalStatus(ctx)
	case errors.As(err, &perr):
		return fail("elect", exitNoExec, err)
	case err != nil:
		return fail("elect", exitDsync, err)
	}
	return exitOK
}
