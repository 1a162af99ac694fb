//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// defaultGrace is how long a command has between SIGTERM and SIGKILL.
const defaultGrace = 5 * time.Second

const lockUsage = `Usage: dsync lock NAME [flags] [--] [CMD [ARG...]]
       dsync lock [flags] -- NAME [--] [CMD [ARG...]]
       dsync lock [flags] NAME NAME... [flags] -- [CMD [ARG...]]

Runs CMD while this process holds the lock NAME, waiting for it first.
Two dsync lock with the same NAME, on any machines sharing the database,
never run their commands at the same time. Stdin, stdout and stderr pass
through; signals dsync receives are passed on. CMD gets the environment
variables DSYNC_LOCK=NAME and DSYNC_TOKEN, the fencing token of the hold:
it increases from hold to hold, so a resource can reject a stale holder.
When the lock is held by another, dsync says so on stderr and waits;
waiting processes get the lock in the order they started waiting. When
the server cannot be reached or answers an error, dsync says so and
keeps trying.

With -n N (N > 1), at most N commands run at once under NAME: each takes
one unit of a semaphore of N units (a key apart from the lock NAME, so
'dsync lock NAME' and 'dsync lock -n 3 NAME' do not exclude each other),
and waiters are served in the order they came. CMD also gets
DSYNC_LIMIT=N. All processes of one NAME should pass the same N: those
that disagree take turns (the commands running at once all have one N,
and are at most that many), so while they disagree up to the larger N
may run at once.

With several NAMEs before a "--", dsync holds them all as one lock set,
or none: it takes them in one order (the bytes of the names) whatever
order they are given in, so two dsync lock over overlapping names never
wait for each other in a cycle. CMD gets DSYNC_LOCKS (the names, one a
line, as given) and DSYNC_TOKENS (their tokens, space-separated, in the
same order) instead of DSYNC_LOCK and DSYNC_TOKEN; the loss of any of
them stops CMD as below; --try gives up when any is held, --wait bounds
the wait for all of them. A name given twice, or -n with several names,
is a usage error. Every argument before the "--" that is not a flag is
a NAME: to run 'echo -- x' under one NAME, write 'dsync lock NAME --
echo -- x'.

Without CMD, dsync holds the lock until interrupted (Ctrl-C, SIGTERM),
then releases it and exits 0; it prints the token (a set's tokens,
space-separated) on stdout, one line, once it holds the lock.

NAME is up to %d bytes of UTF-8 (dsyncmongo.MaxKeyLen: lock documents
are indexed by name), and does not begin with "dsync:", which dsync keeps
for keys of its own (the leases of elections). A NAME that starts with
'-' goes after '--'.

If the hold is lost (the server could not confirm it within --ttl, or an
operator revoked it), CMD gets SIGTERM, and SIGKILL after --grace; dsync
then exits 122, whatever CMD's status. Another process may take the lock
as soon as the lease has expired in the store, which can be a moment
after the loss: --grace does not extend the lock, and CMD may still run
beside the next holder until it exits. So CMD should stop at SIGTERM, or
pass DSYNC_TOKEN to what it writes so that a stale write is refused. The
same
--grace applies when dsync is told to stop: SIGTERM or SIGHUP (and,
without a terminal, SIGINT or SIGQUIT) is passed on to CMD, and SIGKILL
follows if CMD is still running --grace later. Without a terminal, CMD
runs in a process group of its own and these signals go to the whole
group; in a terminal's foreground, CMD shares dsync's group, gets the
keys' signals (Ctrl-C) from the terminal directly, and only CMD itself
is signalled.

Flags:
  --ttl D      lease length: a crashed holder blocks others this long
               (default 15s, at least 100ms, at most 5m)
  --grace D    time between SIGTERM and SIGKILL (default 5s); after a
               loss, the lock is not held meanwhile
  --wait D     give up when the lock is not acquired within D (default: wait on)
  --try        give up at once when the lock is held (124), or when the
               server cannot be reached or answers an error (125)
  -n N         run at most N commands at once under NAME (default 1: a lock)
  (and the global flags; see 'dsync -h')

Exit status: CMD's, or 128+N when signal N ended it; without CMD, 0 after
an interrupt. 122: the hold was lost (CMD was stopped; its status is in
the message on stderr). 124: the lock was not acquired (--try: another
holds it; --wait). 125: dsync failed (the server could not be reached,
or answered an error; with --try too). 126, 127: CMD could not be run,
was not found. 2: usage error, or no server given (neither --uri nor
MONGODB_URI).
`

var lockHelp = fmt.Sprintf(lockUsage, maxLockName)

var lockCmd = &command{
	name:    "lock",
	summary: "run a command while holding a lock",
	usage:   lockHelp,
	run:     runLock,
}

type lockFlags struct {
	runFlags
	try bool
	n   int64
}

// A lockable is what dsync lock holds: a Mutex, or one unit of a
// Semaphore (-n).
type lockable interface {
	TryLockContext(ctx context.Context) error
	LockContext(ctx context.Context) error
	UnlockContext(ctx context.Context) error
	Lost() <-chan struct{}
	Token() uint64
	Key() string
}

// semUnit is one unit of a Semaphore, as a lockable.
type semUnit struct{ *dsync.Semaphore }

func (u semUnit) TryLockContext(ctx context.Context) error { return u.TryAcquireContext(ctx, 1) }
func (u semUnit) LockContext(ctx context.Context) error    { return u.Acquire(ctx, 1) }
func (u semUnit) UnlockContext(ctx context.Context) error  { return u.ReleaseContext(ctx, 1) }

func runLock(g *globals, args []string) int {
	f, names, argv, code, ok := parseLock(g, args)
	if !ok {
		return code
	}
	r := &reporter{w: os.Stderr, verbose: g.verbose}
	// A bad --ttl is a usage error, found before connecting.
	if err := checkArgs(f.ttl, func(c *dsync.Client) error {
		_, err := dsync.NewMutex(c, names[0])
		return err
	}); err != nil {
		return usageError("lock", err)
	}
	rn, ctx, code, ok := newRunner("lock", r, f.grace, argv)
	if !ok {
		return code
	}
	defer rn.close()
	s, code, ok := rn.open(ctx, g, f.ttl)
	if !ok {
		return code
	}
	defer s.close()
	mu, env, err := newLockable(s.locks, names, f.n)
	if err != nil {
		return fail("lock", exitDsync, err)
	}
	if code, ok := acquire(ctx, r, mu, s.locks, names[0], f); !ok {
		return code
	}
	if len(argv) == 0 {
		code := hold(ctx, r, mu, f.ttl)
		if code == exitLost {
			s.abandon()
		}
		return code
	}
	return runHeld(ctx, rn, s, mu, env, f.ttl)
}

// parseLock parses dsync lock's command line: its flags, the NAMEs (one,
// or several before a "--": a lock set) and the command line to run
// (empty: none). When it fails, it has said why and code is the exit
// status.
func parseLock(g *globals, args []string) (f lockFlags, names, argv []string, code int, ok bool) {
	fs := lockFlagSet(g, &f)
	var err error
	names, argv, set := setForm(g, fs, args)
	if !set {
		var pos []string
		if pos, argv, code, err = parseArgs(fs, lockHelp, args, true); err != nil {
			return f, nil, nil, code, false
		}
		names = pos
	}
	switch {
	case len(names) == 0:
		err = errors.New("missing lock NAME")
	case f.runFlags.validate() != nil:
		err = f.runFlags.validate()
	case f.n < 1:
		err = fmt.Errorf("-n must be at least 1, got %d", f.n)
	case set:
		err = checkNames(names, f.n)
	default:
		// A semaphore's key is NAME in its namespace.
		limit := maxLockName
		if f.n > 1 {
			limit -= len("dsync:sem/")
		}
		err = checkName(names[0], limit)
	}
	if err != nil {
		return f, nil, nil, usageError("lock", err), false
	}
	return f, names, argv, 0, true
}

// newLockable makes what dsync lock holds, on the Client locks, and the
// environment variables its command gets besides the token: a Mutex, or
// with -n N (n > 1) one unit of a Semaphore of N, or a lock set of
// several names (lock_set.go).
func newLockable(locks *dsync.Client, names []string, n int64) (lockable, []string, error) {
	if len(names) > 1 {
		return newSetLock(locks, names)
	}
	name := names[0]
	env := []string{"DSYNC_LOCK=" + name}
	if n > 1 {
		s, err := dsync.NewSemaphore(locks, name, n)
		if err != nil {
			return nil, nil, err
		}
		return semUnit{s}, append(env, "DSYNC_LIMIT="+strconv.FormatInt(n, 10)), nil
	}
	m, err := dsync.NewMutex(locks, name)
	if err != nil {
		return nil, nil, err
	}
	return m, env, nil
}

// runHeld runs the command while mu is held, and releases mu after it.
// It returns the command's status; if the hold is lost, it stops the
// command and returns exitLost, leaving the lease to expire: an Unlock
// would only wait for a renewal still in flight to time out (nor does
// the session say goodbye, see session.abandon).
func runHeld(ctx context.Context, rn *runner, s *session, mu lockable, env []string, ttl time.Duration) int {
	r := rn.r
	env = append(env, tokenEnv(mu))
	select {
	case <-mu.Lost():
		r.say("%s lost before the command started", what(mu))
		s.abandon()
		return exitLost
	default:
	}
	j, err := rn.start(ctx, env)
	if err != nil {
		unlock(r, mu, ttl)
		return rn.startStatus(err)
	}
	r.info("holding %s; running %s (pid %d)", what(mu), rn.argv[0], j.cmd.Process.Pid)
	if rn.wait(j, mu.Lost()) {
		unlock(r, mu, ttl)
		return j.status
	}
	r.mute()
	held := what(mu)
	rn.stopLost(j, "%s lost: %s", held, lostCause(mu))
	r.say("command stopped (status %d); exiting %d, lock lost", j.status, exitLost)
	s.abandon()
	return exitLost
}

// hold keeps the lock until a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
// arrives, then releases it: dsync lock NAME without a command. The token
// goes to stdout, one line, once the lock is held.
func hold(ctx context.Context, r *reporter, mu lockable, ttl time.Duration) int {
	fmt.Printf("%s\n", tokenText(mu))
	r.say("holding %s until interrupted", what(mu))
	select {
	case <-ctx.Done():
		unlock(r, mu, ttl)
		r.info("released %s", strings.SplitN(what(mu), " (", 2)[0])
		return exitOK
	case <-mu.Lost():
		r.mute()
		held := what(mu)
		r.say("%s lost: %s", held, lostCause(mu))
		return exitLost
	}
}

// lostCause says why the hold of mu, whose Lost() has closed, was lost:
// as the library says it (the server did not confirm a renewal in time,
// an operator revoked the session, ...). Unlocking a lost hold returns
// that at once and writes nothing: the lease is left to expire. mu is
// unlocked after it (its Token is 0).
func lostCause(mu lockable) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := mu.UnlockContext(ctx)
	if !errors.Is(err, dsync.ErrLost) {
		return "the server did not confirm it in time"
	}
	// A set's error joins its members': the first says enough.
	why, _, _ := strings.Cut(err.Error(), "\n")
	why = strings.TrimPrefix(why, dsync.ErrLost.Error()+": ")
	why = strings.TrimSuffix(why, fmt.Sprintf(" (key %q)", mu.Key()))
	return strings.TrimPrefix(why, "dsync: ")
}
