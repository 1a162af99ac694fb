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
	"github.com/go-dsync/dsync/leader"
)

const electUsage = `Usage: dsync elect NAME [flags] [--] [CMD [ARG...]]
       dsync elect [flags] -- NAME [--] [CMD [ARG...]]
       dsync elect NAME --listen [flags]

Campaigns for the leadership of election NAME and runs CMD while this
process leads: run it on every machine, and CMD runs on one of them at a
time while the others stand by. For commands meant to run until stopped
that must not run twice: a scheduler of cron-like jobs, a queue consumer.
dsync says on stderr when it stands by (and who leads) and when it starts
leading.

If leadership is lost (the server could not confirm it within --ttl), CMD
gets SIGTERM, and SIGKILL after --grace; once it has exited, dsync
campaigns again and runs CMD anew when elected.

When CMD exits by itself, dsync resigns at once and exits with CMD's
status; a standby then takes over and runs CMD, as after a crash. (So a
one-shot job would run once per candidate: to run one on at most one
machine at a time, use 'dsync lock --try'.)

Without CMD, dsync campaigns and leads until interrupted, printing each
term's token on stdout, one line, when it starts leading. With --listen,
it only watches: it prints a line on stdout for each new leader,
"term=T host=H pid=P version=V", until interrupted (terms shorter than
the poll interval may be missed).

Stdin, stdout and stderr pass through; signals dsync receives are passed
on to CMD, or end the campaign. If CMD is still running --grace after
SIGTERM or SIGHUP (and, without a terminal, SIGINT or SIGQUIT) was passed
on, it gets SIGKILL. Without a terminal, CMD runs in a process group of
its own and these signals go to the whole group. CMD gets
DSYNC_ELECTION=NAME and DSYNC_TOKEN, the fencing token of this term.
'dsync status' shows the candidates.

NAME is up to %d bytes of UTF-8: the leadership is a lease on the key
"dsync:election/NAME" in the lock collection (--collection), and a lock's
name may have %d (dsyncmongo.MaxKeyLen). No lock is the lease: lock names
may not begin with "dsync:", so 'dsync lock leader/NAME', say, takes a
lock of its own. A NAME that starts with '-' goes after '--'.

Older releases of dsync kept the leases in a collection of their own
(--elections). Before each campaign dsync reads it, and while a candidate
of an older release holds or waits for NAME there, it exits 125 rather
than lead beside it: stop the older release's candidates of NAME first.

Flags:
  --ttl D       lease length: a crashed leader is replaced within about D
                (default 15s, at least 100ms, at most 5m)
  --grace D     time between SIGTERM and SIGKILL (default 5s)
  --version V   version string this candidate reports in 'dsync status'
  --listen      watch the election instead of campaigning
  (and the global flags; see 'dsync -h')

Exit status: CMD's, or 128+N when signal N ended it or ended the campaign;
without CMD, and with --listen, 0 after an interrupt. 125: dsync failed
(the server could not be reached or answered an error; a candidate of
an older release holds or waits for NAME). 126, 127: CMD could not be
run, was not found. 2: usage error, or no server given (neither --uri
nor MONGODB_URI).
`

var electHelp = fmt.Sprintf(electUsage, maxElectionName, maxLockName)

var electCmd = &command{
	name:    "elect",
	summary: "run a command only while this process leads an election",
	usage:   electHelp,
	run:     runElect,
}

// maxHeartbeat is the longest interval between a candidate's heartbeats.
const maxHeartbeat = 5 * time.Second

// exited is how the leader function tells Run that the command exited by
// itself.
type exited struct{ status int }

func (e *exited) Error() string { return "command exited with status " + strconv.Itoa(e.status) }

func runElect(g *globals, args []string) int {
	fs := newFlagSet("elect", g)
	var ttl, grace time.Duration
	var version string
	var listen bool
	fs.DurationVar(&ttl, "ttl", dsync.DefaultTTL, "")
	fs.DurationVar(&grace, "grace", defaultGrace, "")
	fs.StringVar(&version, "version", "", "")
	fs.BoolVar(&listen, "listen", false, "")
	pos, argv, code, err := parseArgs(fs, electHelp, args, true)
	if err != nil {
		return code
	}
	switch {
	case len(pos) == 0:
		return usageError("elect", errors.New("missing election NAME"))
	case listen && len(argv) > 0:
		return usageError("elect", errors.New("--listen runs no command"))
	case grace <= 0:
		return usageError("elect", fmt.Errorf("--grace must be positive, got %v", grace))
	}
	name := pos[0]
	if err := checkName(name, maxElectionName); err != nil {
		return usageError("elect", err)
	}
	r := &reporter{w: os.Stderr, verbose: g.verbose}
	var term leader.Info // set by OnElected, on the goroutine that calls Run
	opts := []leader.Option{
		leader.WithVersion(version), leader.WithLogger(r.logger()),
		leader.OnElected(func(info leader.Info) { term = info }),
	}
	if ttl/3 > maxHeartbeat {
		// The heartbeat is a third of the TTL by default; dsync status
		// lists members seen within three default heartbeats.
		opts = append(opts, leader.WithHeartbeatInterval(maxHeartbeat))
	}
	if err := checkArgs(ttl, func(c *dsync.Client) error {
		_, err := leader.NewElection(c, name, opts...)
		return err
	}); err != nil {
		return usageError("elect", err) // a bad --ttl or name, found before connecting
	}
	var path string
	if len(argv) > 0 {
		if path, code, err = lookCommand(argv[0]); err != nil {
			return fail("elect", code, err)
		}
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sup := supervise(cancel, grace, r)
	defer sup.stop()

	client, db, err := g.connect(ctx)
	if err != nil {
		return failOrSignal(ctx, "elect", err)
	}
	defer disconnect(client)
	locks, store, err := g.lockClient(db, r.logger(), ttl)
	if err != nil {
		return fail("elect", exitDsync, err)
	}
	defer locks.Close() // runs after e.Close, which resigns first
	members, err := g.memberStore(store)
	if err != nil {
		return fail("elect", exitDsync, err)
	}
	e, err := leader.NewElection(locks, name, append(opts, leader.WithMembers(members))...)
	if err != nil {
		return fail("elect", exitDsync, err)
	}
	defer e.Close()
	if listen {
		return watch(ctx, e)
	}
	r.info("campaigning for %q as %s", name, e.ID())
	standingBy(ctx, r, e)

	err = e.Run(ctx, func(lctx context.Context) error {
		if len(argv) == 0 {
			fmt.Printf("%d\n", term.Token)
			r.say("leading %q (term %d) until interrupted", name, term.Token)
			<-lctx.Done()
			if ctx.Err() == nil {
				r.say("leadership of %q lost (term %d): the server did not confirm it in time; campaigning again", name, term.Token)
			}
			return nil
		}
		env := []string{"DSYNC_ELECTION=" + name, "DSYNC_TOKEN=" + strconv.FormatUint(term.Token, 10)}
		j, err := sup.start(lctx, path, argv, env)
		if err != nil {
			if lctx.Err() != nil {
				return nil // lost, or a signal arrived: Run knows which
			}
			return err
		}
		defer sup.finished()
		r.say("leading %q (term %d); running %s (pid %d)", name, term.Token, argv[0], j.cmd.Process.Pid)
		select {
		case <-j.done:
			return &exited{j.status}
		case <-lctx.Done():
		}
		if ctx.Err() != nil {
			// Signals go to the running command rather than to ctx, so
			// this is only a safety net: stop the command as for a loss.
			j.stop(grace)
			return nil
		}
		r.say("leadership of %q lost (term %d): the server did not confirm it in time; stopping the command (SIGTERM, SIGKILL after %v)",
			name, term.Token, grace)
		if j.stop(grace) {
			r.say("command killed: it did not exit within %v of SIGTERM", grace)
		}
		// The command is gone: from now on a terminating signal is for
		// dsync itself, not for a job that can no longer receive it.
		sup.finished()
		r.say("command stopped (status %d); campaigning again for %q", j.status, name)
		standingBy(ctx, r, e)
		return nil
	})
	var done *exited
	switch {
	case errors.As(err, &done):
		r.info("command exited with status %d; resigned from %q", done.status, name)
		return done.status
	case ctx.Err() != nil && len(argv) == 0:
		return exitOK // interrupted, as asked
	case ctx.Err() != nil:
		return signalStatus(ctx)
	case err != nil:
		var perr *os.PathError
		if errors.As(err, &perr) {
			return fail("elect", exitNoExec, err)
		}
		return fail("elect", exitDsync, err)
	}
	return exitOK
}

// standingBy says who leads, if another candidate does: this one stands
// by until it is elected.
func standingBy(ctx context.Context, r *reporter, e *leader.Election) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := e.Leader(ctx)
	if err != nil || info.ID == e.ID() {
		return // nobody leads (this one is about to), or it cannot be told
	}
	r.say("standing by for %q: led by %s (pid %d, term %d)", e.Name(), info.Host, info.PID, info.Token)
}

// watch prints each new leader of e's election until ctx ends (dsync
// elect --listen); Observe closes its channel only then.
func watch(ctx context.Context, e *leader.Election) int {
	for info := range e.Observe(ctx) {
		fmt.Printf("term=%d host=%s pid=%d version=%q\n", info.Token, info.Host, info.PID, info.Version)
	}
	return exitOK
}
