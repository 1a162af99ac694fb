//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// onceFlags are dsync once's flags.
type onceFlags struct {
	runFlags
	check  bool          // --check: run nothing, say whether done
	forget time.Duration // --forget-after
}

// options are the options of the Once the flags ask for.
func (f onceFlags) options() []dsync.Option {
	if f.forget > 0 {
		return []dsync.Option{dsync.WithForgetAfter(f.forget)}
	}
	return nil
}

func runOnce(g *globals, args []string) int {
	f, name, argv, code, ok := parseOnce(g, args)
	if !ok {
		return code
	}
	if err := checkArgs(f.ttl, func(c *dsync.Client) error {
		_, err := dsync.NewOnce(c, name, f.options()...)
		return err
	}); err != nil {
		return usageError("once", err)
	}
	r := &reporter{w: os.Stderr, verbose: g.verbose}
	rn, ctx, code, ok := newRunner("once", r, f.grace, argv)
	if !ok {
		return code
	}
	defer rn.close()
	s, code, ok := rn.open(ctx, g, f.ttl)
	if !ok {
		return code
	}
	defer s.close()
	once, err := dsync.NewOnce(s.locks, name, f.options()...)
	if err != nil {
		return fail("once", exitDsync, err)
	}
	if code, finished := onceDone(ctx, r, once, name, f.check); finished {
		return code
	}
	o := &onceRun{rn: rn, s: s, name: name}
	return o.exit(ctx, o.do(ctx, once, f.wait), f.wait)
}

// parseOnce parses dsync once's command line: its flags, NAME and the
// command line to run. When it fails, it has said why and code is the
// exit status.
func parseOnce(g *globals, args []string) (f onceFlags, name string, argv []string, code int, ok bool) {
	fs := newFlagSet("once", g)
	f.runFlags.register(fs)
	fs.BoolVar(&f.check, "check", false, "")
	fs.DurationVar(&f.forget, "forget-after", 0, "")
	pos, argv, code, err := parseArgs(fs, onceHelp, args, true)
	if err != nil {
		return f, "", nil, code, false
	}
	switch {
	case len(pos) == 0:
		err = errors.New("missing NAME")
	case len(argv) == 0 && !f.check:
		err = errors.New("missing CMD")
	case len(argv) > 0 && f.check:
		err = errors.New("--check runs no command")
	case f.runFlags.validate() != nil:
		err = f.runFlags.validate()
	case f.forget < 0:
		err = fmt.Errorf("--forget-after must not be negative, got %v", f.forget)
	default:
		err = checkName(pos[0], maxOnceName)
	}
	if err != nil {
		return f, "", nil, usageError("once", err), false
	}
	return f, pos[0], argv, 0, true
}

// onceDone answers --check, and tells whether there is nothing to run:
// finished, with the exit status, when NAME is done, when it could not
// be told, and for --check.
func onceDone(ctx context.Context, r *reporter, once *dsync.Once, name string, check bool) (code int, finished bool) {
	done, err := once.Done(ctx)
	switch {
	case err != nil:
		return failOrSignal(ctx, "once", err), true
	case check && done:
		fmt.Println("done")
		return exitOK, true
	case check:
		return exitFailure, true
	case done:
		r.info("once %q: already done", name)
		return exitOK, true
	}
	return 0, false
}
