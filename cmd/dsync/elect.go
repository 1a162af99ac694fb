//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
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
  --progress D  end a term whose CMD reports no progress for D, as a
                lost one ends (CMD stopped, campaign again): CMD
                reports by writing anything to the file descriptor
                $DSYNC_PROGRESS_FD names; writes send nothing to the
                server (default 0: no deadline)
  --priority N  this candidate's priority (default 0): at a handover the
                live candidate of the highest priority leads
  --preempt-after D
                while leading, hand over to a better candidate (of a
                higher priority, or a newer --version under
                --version-rule) seen queued for D (default: never)
  --version-rule
                leadership follows the newest --version among the live
                candidates: this one does not lead while a newer one
                is live (versions compare as semantic versions)
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

// electFlags are dsync elect's flags.
type electFlags struct {
	ttl, grace time.Duration
	version    string
	listen     bool
	progress   time.Duration // --progress; 0: none
	priority   int           // --priority
	preempt    time.Duration // --preempt-after; <0: never
	versions   bool          // --version-rule
}

func runElect(g *globals, args []string) int {
	f, name, argv, code, ok := parseElect(g, args)
	if !ok {
		return code
	}
	r := &reporter{w: os.Stderr, verbose: g.verbose}
	el := &electRun{name: name}
	opts := el.options(f, r)
	if err := checkArgs(f.ttl, func(c *dsync.Client) error {
		_, err := leader.NewElection(c, name, opts...)
		return err
	}); err != nil {
		return usageError("elect", err) // a bad --ttl or name, found before connecting
	}
	rn, ctx, code, ok := newRunner("elect", r, f.grace, argv)
	if !ok {
		return code
	}
	defer rn.close()
	el.rn = rn
	s, code, ok := rn.open(ctx, g, f.ttl)
	if !ok {
		return code
	}
	defer s.close() // after e.Close, which resigns first
	members, err := g.memberStore(s.store)
	if err != nil {
		return fail("elect", exitDsync, err)
	}
	e, err := leader.NewElection(s.locks, name, append(opts, leader.WithMembers(members))...)
	if err != nil {
		return fail("elect", exitDsync, err)
	}
	defer e.Close()
	el.e = e
	if f.listen {
		return watch(ctx, e)
	}
	r.info("campaigning for %q as %s", name, e.ID())
	standingBy(ctx, r, e)
	return el.exit(ctx, e.Run(ctx, func(lctx context.Context) error { return el.lead(ctx, lctx) }))
}

// parseElect parses dsync elect's command line: its flags, NAME and the
// command line to run (empty: none). When it fails, it has said why and
// code is the exit status.
func parseElect(g *globals, args []string) (f electFlags, name string, argv []string, code int, ok bool) {
	fs := newFlagSet("elect", g)
	fs.DurationVar(&f.ttl, "ttl", dsync.DefaultTTL, "")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "")
	fs.StringVar(&f.version, "version", "", "")
	fs.BoolVar(&f.listen, "listen", false, "")
	fs.DurationVar(&f.progress, "progress", 0, "")
	fs.IntVar(&f.priority, "priority", 0, "")
	fs.DurationVar(&f.preempt, "preempt-after", -1, "")
	fs.BoolVar(&f.versions, "version-rule", false, "")
	pos, argv, code, err := parseArgs(fs, electHelp, args, true)
	if err != nil {
		return f, "", nil, code, false
	}
	switch {
	case len(pos) == 0:
		err = errors.New("missing election NAME")
	case f.listen && len(argv) > 0:
		err = errors.New("--listen runs no command")
	case f.grace <= 0:
		err = fmt.Errorf("--grace must be positive, got %v", f.grace)
	case f.progress < 0:
		err = fmt.Errorf("--progress must not be negative, got %v", f.progress)
	case f.progress > 0 && len(argv) == 0:
		err = errors.New("--progress needs a command to report it")
	case f.versions && f.version == "":
		err = errors.New("--version-rule needs this candidate's --version")
	default:
		err = checkName(pos[0], maxElectionName)
	}
	if err != nil {
		return f, "", nil, usageError("elect", err), false
	}
	return f, pos[0], argv, 0, true
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
