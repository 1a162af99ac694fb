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

const partitionUsage = `Usage: dsync partition NAME --shards N [flags] [--] CMD [ARG...]
       dsync partition [flags] -- NAME [--] CMD [ARG...]

Joins partition NAME, whose work is split in N shards, and runs CMD once
for each shard this process owns: run it on every machine, and each shard
runs on one of them at a time, spread over the live processes by weight
(at most one more shard on any process than on another of equal weight).
A process that joins gets its share from the others, which stop their
command for a shard before handing it over; a process that stops or
crashes leaves its shards to the others (after a crash, once its lease
has expired: about --ttl).

Each shard is a lease of its own, the election "NAME#I" of shard I, with
its own fencing token; 'dsync status' shows the shards, their owners and
tokens. CMD gets DSYNC_PARTITION=NAME, DSYNC_SHARD=I (0 to N-1),
DSYNC_SHARDS=N and DSYNC_TOKEN, the fencing token of this term of the
shard. When the shard is lost (the server could not confirm it within
--ttl) or handed over to another process, its CMD gets SIGTERM, and
SIGKILL after --grace.

SIGINT, SIGTERM, SIGHUP or SIGQUIT make dsync leave: every CMD gets
SIGTERM (SIGKILL after --grace), every shard is handed over, and dsync
exits 0. Other signals are not passed on. When a CMD exits by itself,
dsync leaves likewise and exits with its status: a shard's command is
meant to run until stopped.

Stdin, stdout and stderr pass through, shared by every CMD. Without a
terminal, each CMD runs in a process group of its own, which is stopped
as a whole.

NAME with the shard's "#I" is up to %d bytes of UTF-8. A NAME that
starts with '-' goes after '--'.

Flags:
  --shards N    number of shards (required, at least 1); every process
                of NAME must give the same
  --weight W    this process's weight (default 1): a process of weight 2
                takes twice the shards of one of weight 1
  --ttl D       lease length: a crashed owner's shards move within about
                D (default 15s, at least 100ms, at most 5m)
  --grace D     time between SIGTERM and SIGKILL (default 5s)
  --progress D  end a shard's run whose CMD reports no progress for D,
                as a lost shard's ends (CMD stopped; the shard moves to
                another process): CMD reports by writing anything to the
                file descriptor $DSYNC_PROGRESS_FD names; writes send
                nothing to the server (default 0: no deadline)
  (and the global flags; see 'dsync -h')

Exit status: 0 after a signal made dsync leave; the status of a CMD that
exited by itself. 125: dsync failed (the server could not be reached or
answered an error). 126, 127: CMD could not be run, was not found. 2:
usage error, or no server given (neither --uri nor MONGODB_URI).
`

var partitionHelp = fmt.Sprintf(partitionUsage, maxElectionName)

var partitionCmd = &command{
	name:    "partition",
	summary: "run a command for each shard of a partition this process owns",
	usage:   partitionHelp,
	run:     runPartition,
}

// partitionFlags are dsync partition's flags.
type partitionFlags struct {
	shards     int
	weight     float64
	ttl, grace time.Duration
	progress   time.Duration // --progress; 0: none
}

func runPartition(g *globals, args []string) int {
	f, name, argv, code, ok := parsePartition(g, args)
	if !ok {
		return code
	}
	r := &reporter{w: os.Stderr, verbose: g.verbose}
	if err := checkArgs(f.ttl, func(c *dsync.Client) error {
		_, err := leader.NewPartition(c, name, f.shards, leader.WithMembers(uncalledMembers{}), leader.WithWeight(f.weight))
		return err
	}); err != nil {
		return usageError("partition", err) // a bad --ttl, found before connecting
	}
	rn, ctx, code, ok := newRunner("partition", r, f.grace, argv)
	if !ok {
		return code
	}
	defer rn.close()
	s, code, ok := rn.open(ctx, g, f.ttl)
	if !ok {
		return code
	}
	defer s.close() // after p.Close, which hands the shards over
	members, err := g.memberStore(s.store)
	if err != nil {
		return fail("partition", exitDsync, err)
	}
	p, err := leader.NewPartition(s.locks, name, f.shards, leader.WithMembers(members), leader.WithWeight(f.weight), leader.WithProgressDeadline(f.progress))
	if err != nil {
		return fail("partition", exitDsync, err)
	}
	defer p.Close()
	rctx, end := context.WithCancelCause(ctx)
	defer end(nil)
	pr := &partitionRun{name: name, shards: f.shards, rn: rn, leaving: ctx, end: end, progress: f.progress > 0}
	r.info("joining partition %q (%d shards) as %s", name, f.shards, p.ID())
	return pr.exit(ctx, p.Run(rctx, pr.own))
}

// uncalledMembers is the MemberStore of the Partition checkArgs makes to
// judge partition's arguments before connecting: NewPartition only keeps
// its store, and that Partition never runs, so no method is called. The
// test double leadertest.MemoryMembers would serve too, but a shipped
// command does not link a test package for a value it never uses.
type uncalledMembers struct{ leader.MemberStore }

// parsePartition parses dsync partition's command line. When it fails,
// it has said why and code is the exit status.
func parsePartition(g *globals, args []string) (f partitionFlags, name string, argv []string, code int, ok bool) {
	fs := newFlagSet("partition", g)
	fs.IntVar(&f.shards, "shards", 0, "")
	fs.Float64Var(&f.weight, "weight", 1, "")
	fs.DurationVar(&f.ttl, "ttl", dsync.DefaultTTL, "")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "")
	fs.DurationVar(&f.progress, "progress", 0, "")
	pos, argv, code, err := parseArgs(fs, partitionHelp, args, true)
	if err != nil {
		return f, "", nil, code, false
	}
	switch {
	case len(pos) == 0:
		err = errors.New("missing partition NAME")
	case len(argv) == 0:
		err = errors.New("missing the command to run for each shard")
	case f.shards <= 0:
		err = fmt.Errorf("--shards must be at least 1, got %d", f.shards)
	case !(f.weight > 0) || f.weight > 1e6:
		err = fmt.Errorf("--weight must be positive (at most 1e6), got %v", f.weight)
	case f.grace <= 0:
		err = fmt.Errorf("--grace must be positive, got %v", f.grace)
	case f.progress < 0:
		err = fmt.Errorf("--progress must not be negative, got %v", f.progress)
	default:
		// The longest shard election name is the last shard's.
		suffix := "#" + strconv.Itoa(f.shards-1)
		if err = checkName(pos[0]+suffix, maxElectionName); err != nil && pos[0] != "" {
			err = fmt.Errorf("NAME with its last shard's %q: %w", suffix, err)
		}
	}
	if err != nil {
		return f, "", nil, usageError("partition", err), false
	}
	return f, pos[0], argv, 0, true
}

// A partitionRun runs the command for each shard this process owns.
// Signals are not passed on to the commands (several may run): one that
// tells dsync to stop cancels the partition's context (the supervisor has
// no job of its own), and each shard's command is then stopped as for a
// handover.
type partitionRun struct {
	name   string
	shards int
	rn     *runner
	// leaving ends when a signal tells dsync to leave.
	leaving context.Context
	// end ends Run's context, with an *exited cause when a command
	// exits by itself, or with the error that kept one from starting.
	// (leader.Partition.Run does not return the error own returns: it
	// hands the shard back, which ends the term, before it checks
	// whether the term had ended, and would run the command again.)
	end context.CancelCauseFunc
	// progress: each command reports progress (--progress), on a pipe.
	progress bool
}

// own runs the command for shard while this process owns it, ctx's term.
func (pr *partitionRun) own(ctx context.Context, shard int) error {
	rn := pr.rn
	term, _ := leader.TermOf(ctx)
	env := []string{
		"DSYNC_PARTITION=" + pr.name, "DSYNC_SHARD=" + strconv.Itoa(shard),
		"DSYNC_SHARDS=" + strconv.Itoa(pr.shards), "DSYNC_TOKEN=" + strconv.FormatUint(term.Token, 10),
	}
	if ctx.Err() != nil {
		return nil // lost or handed over before it started
	}
	var pipe *progressPipe
	if pr.progress {
		var err error
		if pipe, err = newProgressPipe(); err != nil {
			pr.end(err)
			return err
		}
		env = append(env, pipe.env())
	}
	j, err := startJob(rn.path, rn.argv, env, rn.sup.group, pipe.files()...)
	if err != nil {
		pipe.discard()
		pr.end(err)
		return err
	}
	if pipe != nil {
		pipe.watch(ctx)
		defer pipe.close()
	}
	rn.r.say("owning shard %d of %q (term %d); running %s (pid %d)", shard, pr.name, term.Token, rn.argv[0], j.cmd.Process.Pid)
	select {
	case <-j.done:
		err := &exited{j.status}
		pr.end(err)
		return err
	case <-ctx.Done():
	}
	why := "lost or handed over"
	switch {
	case errors.Is(context.Cause(ctx), leader.ErrStalled):
		why = "lost: " + lossWhy(ctx)
	case pr.leaving.Err() != nil:
		why = "left: " + context.Cause(pr.leaving).Error()
	}
	rn.r.say("shard %d of %q (term %d) %s; stopping its command (SIGTERM, SIGKILL after %v)", shard, pr.name, term.Token, why, rn.grace)
	if j.stop(rn.grace) {
		rn.r.say("command of shard %d killed: it did not exit within %v of SIGTERM", shard, rn.grace)
	}
	return nil
}

// exit is dsync partition's exit status after Run ended with err.
func (pr *partitionRun) exit(ctx context.Context, err error) int {
	var done *exited
	var perr *os.PathError
	switch {
	case errors.As(err, &done):
		pr.rn.r.info("a command exited with status %d; left %q", done.status, pr.name)
		return done.status
	case ctx.Err() != nil:
		pr.rn.r.info("left %q: %v", pr.name, context.Cause(ctx))
		return exitOK // a signal asked to leave, and every shard was handed over
	case errors.As(err, &perr):
		return fail("partition", exitNoExec, err)
	case err != nil:
		return fail("partition", exitDsync, err)
	}
	return exitOK
}
