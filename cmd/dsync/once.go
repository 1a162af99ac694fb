//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

const onceUsage = `Usage: dsync once NAME [flags] [--] CMD [ARG...]
       dsync once --check NAME

Runs CMD to success once per NAME, across every machine sharing the
database and across restarts (dsync.Once): the first dsync once NAME runs
it; those started meanwhile wait for it, and exit 0 without running CMD
once it has exited 0. If CMD fails (a non-zero status, or a signal), or
its lock is lost, the next dsync once NAME runs it again. CMD runs under
a lock (apart from 'dsync lock NAME'), with the environment variables
DSYNC_ONCE=NAME and DSYNC_TOKEN, the fencing token of its hold; signals
are passed on and the lock's loss is handled as in 'dsync lock'.

CMD runs at least once, and more than once only if a run exited 0 but its
success could not be recorded before its lock was lost (the process was
killed, or the server did not answer): make CMD idempotent, or have it
fence what it writes with DSYNC_TOKEN. For a job that runs once per
period across replicas, put the period in NAME, and let old periods go
with --forget-after: report/2026-11-23T10:00.

NAME is up to %d bytes of UTF-8.

Flags:
  --ttl D      lease length: a crashed runner blocks others this long
               (default 15s, at least 100ms, at most 5m)
  --grace D    time between SIGTERM and SIGKILL (default 5s)
  --wait D     give up when CMD could not start within D (default: wait on)
  --check      run nothing: exit 0 if NAME is done ("done" on stdout), 1 if not
  --forget-after D
               let compaction delete NAME's record of success D after it (plus
               the idle age, 30m): a later run of NAME runs CMD again
               (default: keep it for good)
  (and the global flags; see 'dsync -h')

Exit status: 0 when CMD has run to success (now or before); CMD's status,
or 128+N when signal N ended it, when it failed here. 1: --check, not
done. 122: the lock was lost (CMD was stopped), or CMD succeeded but its
success could not be confirmed before its lock was lost, or met the
record of another run (CMD may also run, or have run, elsewhere).
124: CMD did not start within --wait. 125: dsync failed (the server could
not be reached, or answered an error). 126, 127: CMD could not be run,
was not found. 2: usage error, or no server given (neither --uri nor
MONGODB_URI).
`

// maxOnceName is the longest NAME: its key is "dsync:once/NAME".
var maxOnceName = maxLockName - len("dsync:once/")

var onceHelp = fmt.Sprintf(onceUsage, maxOnceName)

var onceCmd = &command{
	name:    "once",
	summary: "run a command to success once per name",
	usage:   onceHelp,
	run:     runOnce,
}

// errCmdFailed carries a failed command's exit status out of Once.Do.
type errCmdFailed struct{ status int }

func (e errCmdFailed) Error() string { return "the command exited " + strconv.Itoa(e.status) }

func runOnce(g *globals, args []string) int {
	fs := newFlagSet("once", g)
	var f lockFlags
	var check bool
	var forget time.Duration
	fs.DurationVar(&f.ttl, "ttl", dsync.DefaultTTL, "")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "")
	fs.DurationVar(&f.wait, "wait", 0, "")
	fs.BoolVar(&check, "check", false, "")
	fs.DurationVar(&forget, "forget-after", 0, "")
	pos, argv, code, err := parseArgs(fs, onceHelp, args, true)
	if err != nil {
		return code
	}
	switch {
	case len(pos) == 0:
		return usageError("once", errors.New("missing NAME"))
	case len(argv) == 0 && !check:
		return usageError("once", errors.New("missing CMD"))
	case len(argv) > 0 && check:
		return usageError("once", errors.New("--check runs no command"))
	case f.grace <= 0:
		return usageError("once", fmt.Errorf("--grace must be positive, got %v", f.grace))
	case f.wait < 0:
		return usageError("once", fmt.Errorf("--wait must not be negative, got %v", f.wait))
	case forget < 0:
		return usageError("once", fmt.Errorf("--forget-after must not be negative, got %v", forget))
	}
	var onceOpts []dsync.KeyOption
	if forget > 0 {
		onceOpts = append(onceOpts, dsync.WithForgetAfter(forget))
	}
	name := pos[0]
	if err := checkName(name, maxOnceName); err != nil {
		return usageError("once", err)
	}
	if err := checkArgs(f.ttl, func(c *dsync.Client) error {
		_, err := dsync.NewOnce(c, name, onceOpts...)
		return err
	}); err != nil {
		return usageError("once", err)
	}
	r := &reporter{w: os.Stderr, verbose: g.verbose}
	var path string
	if len(argv) > 0 {
		if path, code, err = lookCommand(argv[0]); err != nil {
			return fail("once", code, err)
		}
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sup := supervise(cancel, f.grace, r)
	defer sup.stop()
	client, db, err := g.connect(ctx)
	if err != nil {
		return failOrSignal(ctx, "once", err)
	}
	polite := true
	defer func() {
		if polite {
			disconnect(client)
		}
	}()
	locks, _, err := g.lockClient(db, r.logger(), f.ttl)
	if err != nil {
		return fail("once", exitDsync, err)
	}
	defer locks.Close()
	once, err := dsync.NewOnce(locks, name, append(onceOpts, dsync.WithLogger(r.logger()))...)
	if err != nil {
		return fail("once", exitDsync, err)
	}

	done, err := once.Done(ctx)
	switch {
	case err != nil:
		return failOrSignal(ctx, "once", err)
	case check && done:
		fmt.Println("done")
		return exitOK
	case check:
		return exitFailure
	case done:
		r.info("once %q: already done", name)
		return exitOK
	}

	// --wait bounds the wait for the lock, not the command's run.
	dctx, stopWait := context.WithCancelCause(ctx)
	defer stopWait(nil)
	var waitTimer *time.Timer
	if f.wait > 0 {
		waitTimer = time.AfterFunc(f.wait, func() { stopWait(errWaited) })
	}
	ran, status, lost := false, 0, false
	err = once.Do(dctx, func(fctx context.Context) error {
		if waitTimer != nil && !waitTimer.Stop() {
			return context.Cause(dctx) // --wait ran out just now
		}
		ran = true
		token, _ := dsync.TokenOf(fctx)
		env := []string{"DSYNC_ONCE=" + name, "DSYNC_TOKEN=" + strconv.FormatUint(token, 10)}
		j, err := sup.start(fctx, path, argv, env)
		if err != nil {
			var sig errSignal
			if errors.As(err, &sig) {
				status = sig.status()
				return err
			}
			status = exitNoExec
			return err
		}
		r.info("once %q: running %s (pid %d, token %d)", name, argv[0], j.cmd.Process.Pid, token)
		select {
		case <-j.done:
			sup.finished()
		case <-fctx.Done():
			lost = errors.Is(context.Cause(fctx), dsync.ErrLost)
			if lost {
				r.mute()
				r.say("once %q (token %d): lock lost; stopping the command (SIGTERM, SIGKILL after %v)", name, token, f.grace)
			}
			if j.stop(f.grace) {
				r.say("command killed: it did not exit within %v of SIGTERM", f.grace)
			}
			sup.finished()
			status = j.status
			return context.Cause(fctx)
		}
		status = j.status
		if status != 0 {
			return errCmdFailed{status}
		}
		return nil
	})
	var failed errCmdFailed
	switch {
	case err == nil && ran:
		r.info("once %q: done", name)
		return exitOK
	case err == nil:
		r.info("once %q: done elsewhere", name)
		return exitOK
	case errors.As(err, &failed):
		return failed.status
	case lost:
		r.say("once %q: command stopped (status %d); exiting %d, lock lost", name, status, exitLost)
		polite = false
		return exitLost
	case ran && status == 0 && ctx.Err() == nil:
		// The command succeeded, but its success is unconfirmed.
		r.say("once %q: %v", name, oneLine(err))
		return exitLost
	case ctx.Err() != nil:
		return signalStatus(ctx)
	case errors.Is(err, errWaited):
		r.say("once %q: the command did not start within %v", name, f.wait)
		return exitNotLocked
	case ran && status == exitNoExec:
		return fail("once", exitNoExec, err)
	default:
		return fail("once", exitDsync, err)
	}
}
