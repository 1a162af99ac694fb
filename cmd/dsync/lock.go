//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/dsync"
)

// defaultGrace is how long a command has between SIGTERM and SIGKILL.
const defaultGrace = 5 * time.Second

const lockUsage = `Usage: dsync lock NAME [flags] [--] [CMD [ARG...]]
       dsync lock [flags] -- NAME [--] [CMD [ARG...]]

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

Without CMD, dsync holds the lock until interrupted (Ctrl-C, SIGTERM),
then releases it and exits 0; it prints the token on stdout, one line,
once it holds the lock.

NAME is up to %d bytes of UTF-8 (dsyncmongo.MaxKeyLen: lock documents
are indexed by name), and does not begin with "dsync:", which dsync keeps
for keys of its own (the leases of elections). A NAME that starts with
'-' goes after '--'.

If the hold is lost (the server could not confirm it within --ttl), CMD
gets SIGTERM, and SIGKILL after --grace; from then on another process may
take the lock. dsync then exits 122, whatever CMD's status. The same
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
  --grace D    time between SIGTERM and SIGKILL (default 5s)
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
	ttl, grace, wait time.Duration
	try              bool
	n                int64
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
	fs := newFlagSet("lock", g)
	var f lockFlags
	fs.DurationVar(&f.ttl, "ttl", dsync.DefaultTTL, "")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "")
	fs.DurationVar(&f.wait, "wait", 0, "")
	fs.BoolVar(&f.try, "try", false, "")
	fs.Int64Var(&f.n, "n", 1, "")
	pos, argv, code, err := parseArgs(fs, lockHelp, args, true)
	if err != nil {
		return code
	}
	switch {
	case len(pos) == 0:
		return usageError("lock", errors.New("missing lock NAME"))
	case f.grace <= 0:
		return usageError("lock", fmt.Errorf("--grace must be positive, got %v", f.grace))
	case f.wait < 0:
		return usageError("lock", fmt.Errorf("--wait must not be negative, got %v", f.wait))
	case f.n < 1:
		return usageError("lock", fmt.Errorf("-n must be at least 1, got %d", f.n))
	}
	name := pos[0]
	limit := maxLockName
	if f.n > 1 {
		limit -= len("dsync:sem/")
	}
	if err := checkName(name, limit); err != nil {
		return usageError("lock", err)
	}
	r := &reporter{w: os.Stderr, verbose: g.verbose}
	// A bad --ttl is a usage error, found before connecting.
	if err := checkArgs(f.ttl, func(c *dsync.Client) error {
		_, err := dsync.NewMutex(c, name)
		return err
	}); err != nil {
		return usageError("lock", err)
	}
	var path string
	if len(argv) > 0 {
		if path, code, err = lookCommand(argv[0]); err != nil {
			return fail("lock", code, err)
		}
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sup := supervise(cancel, f.grace, r)
	defer sup.stop()

	client, db, err := g.connect(ctx)
	if err != nil {
		return failOrSignal(ctx, "lock", err)
	}
	// polite: whether to close the locks' Client and end the driver's sessions
	// on the server at exit. Not once the lock is lost: its lease ended
	// it, so Close has nothing to end, and what else both send is best
	// effort, for a server that is probably gone.
	polite := true
	defer func() {
		if polite {
			disconnect(client)
		}
	}()
	locks, _, err := g.lockClient(db, r.logger(), f.ttl)
	if err != nil {
		return fail("lock", exitDsync, err)
	}
	defer func() {
		if polite {
			locks.Close()
		}
	}()
	var mu lockable
	env := []string{"DSYNC_LOCK=" + name}
	if f.n > 1 {
		s, err := dsync.NewSemaphore(locks, name, f.n, dsync.WithLogger(r.logger()))
		if err != nil {
			return fail("lock", exitDsync, err)
		}
		mu = semUnit{s}
		env = append(env, "DSYNC_LIMIT="+strconv.FormatInt(f.n, 10))
	} else {
		m, err := dsync.NewMutex(locks, name, dsync.WithLogger(r.logger()))
		if err != nil {
			return fail("lock", exitDsync, err)
		}
		mu = m
	}

	if code, ok := acquire(ctx, r, mu, locks, name, f); !ok {
		return code
	}
	if len(argv) == 0 {
		code := hold(ctx, r, mu, f.ttl)
		if code == exitLost {
			polite = false
		}
		return code
	}

	env = append(env, "DSYNC_TOKEN="+strconv.FormatUint(mu.Token(), 10))
	select {
	case <-mu.Lost():
		r.say("lock %q (token %d) lost before the command started", name, mu.Token())
		polite = false
		return exitLost
	default:
	}
	j, err := sup.start(ctx, path, argv, env)
	if err != nil {
		unlock(r, mu, f.ttl)
		var sig errSignal
		if errors.As(err, &sig) {
			return sig.status()
		}
		return fail("lock", exitNoExec, err)
	}
	r.info("holding lock %q (token %d); running %s (pid %d)", name, mu.Token(), argv[0], j.cmd.Process.Pid)
	select {
	case <-j.done:
		sup.finished()
		unlock(r, mu, f.ttl)
		return j.status
	case <-mu.Lost():
	}
	r.mute()
	r.say("lock %q (token %d) lost: the server did not confirm it in time; stopping the command (SIGTERM, SIGKILL after %v)",
		name, mu.Token(), f.grace)
	if j.stop(f.grace) {
		r.say("command killed: it did not exit within %v of SIGTERM", f.grace)
	}
	sup.finished()
	r.say("command stopped (status %d); exiting %d, lock lost", j.status, exitLost)
	// No Unlock: a lost lease is left to expire, and Unlock would only
	// wait for a renewal still in flight to time out. Nor a Close or a
	// Disconnect (see polite).
	polite = false
	return exitLost
}

// hold keeps the lock until a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
// arrives, then releases it: dsync lock NAME without a command. The token
// goes to stdout, one line, once the lock is held.
func hold(ctx context.Context, r *reporter, mu lockable, ttl time.Duration) int {
	fmt.Printf("%d\n", mu.Token())
	r.say("holding lock %q (token %d) until interrupted", mu.Key(), mu.Token())
	select {
	case <-ctx.Done():
		unlock(r, mu, ttl)
		r.info("released lock %q", mu.Key())
		return exitOK
	case <-mu.Lost():
		r.mute()
		r.say("lock %q (token %d) lost: the server did not confirm it in time", mu.Key(), mu.Token())
		return exitLost
	}
}

// acquire takes the lock as the flags say, saying so when it has to wait.
// When it does not get the lock, it returns the exit status.
//
// Only a lock held (or waited for) by another is "not acquired" (124):
// with --try, a server that cannot be reached or answers an error is a
// failure (125), with its error; a waiting dsync lock says the error and
// waits on, as LockContext retries.
func acquire(ctx context.Context, r *reporter, mu lockable, b *dsync.Client, name string, f lockFlags) (int, bool) {
	err := mu.TryLockContext(ctx)
	switch {
	case err == nil:
		r.info("acquired lock %q (token %d)", name, mu.Token())
		return 0, true
	case ctx.Err() != nil:
		return signalStatus(ctx), false
	case !errors.Is(err, dsync.ErrHeld) && f.try:
		return fail("lock", exitDsync, err), false
	case !errors.Is(err, dsync.ErrHeld):
		r.say("lock %q not acquired at once: %s; waiting", name, oneLine(err))
	default:
		holder := describeHolder(ctx, b, name, f.n)
		if f.try {
			r.say("lock %q not acquired: %s", name, holder)
			return exitNotLocked, false
		}
		r.say("lock %q %s; waiting", name, holder)
	}
	start := time.Now()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if f.wait > 0 {
		wctx, cancel = context.WithTimeoutCause(ctx, f.wait, errWaited)
	}
	defer cancel()
	err = mu.LockContext(wctx)
	switch {
	case err == nil:
		r.say("acquired lock %q (token %d) after %s", name, mu.Token(), fmtDur(time.Since(start)))
		return 0, true
	case ctx.Err() != nil:
		return signalStatus(ctx), false
	case errors.Is(err, errWaited):
		r.say("lock %q not acquired within %v: %s", name, f.wait, describeHolder(ctx, b, name, f.n))
		return exitNotLocked, false
	default:
		return fail("lock", exitDsync, err), false
	}
}

var errWaited = errors.New("waited long enough")

// describeHolder says who holds name, for a message: "held by HOST (pid
// N, token T)", with the pid of the holder's command when the holder
// runs on this machine.
func describeHolder(ctx context.Context, b *dsync.Client, name string, n int64) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if n > 1 {
		return describeUnits(ctx, b, name)
	}
	// The head of the lock's queue: its holder, or the claim whose turn
	// has just come.
	q, err := b.Queue(ctx, name)
	switch {
	case err != nil:
		return "its holder cannot be read: " + oneLine(err)
	case len(q) == 0:
		return "it is free now"
	}
	info := q[0]
	if host, _ := os.Hostname(); host == info.Host {
		if cmd, ok := childProcesses([]int{info.PID})[info.PID]; ok {
			return fmt.Sprintf("held by %s (pid %d, running pid %d; token %d)", info.Host, info.PID, cmd, info.Token)
		}
	}
	return fmt.Sprintf("held by %s (pid %d, token %d)", info.Host, info.PID, info.Token)
}

// describeUnits says how the units of the semaphore name are held, for a
// message: "3/3 units held (first by HOST, pid N, token T)". The claims of
// the queue that hold by the grant rule (or are about to) count.
func describeUnits(ctx context.Context, b *dsync.Client, name string) string {
	q, err := b.Queue(ctx, dsync.NamespacedKey("sem", name))
	switch {
	case err != nil:
		return "its holders cannot be read: " + oneLine(err)
	case len(q) == 0:
		return "it is free now"
	}
	limit, held := q[0].Limit, int64(0)
	for _, c := range q {
		if c.Holds {
			held += c.Weight
		}
	}
	return fmt.Sprintf("%d/%d units held (first by %s, pid %d, token %d)", held, limit, q[0].Host, q[0].PID, q[0].Token)
}

// unlock releases the hold, bounded by the TTL; a lost hold needs no
// release, and a failed one just expires.
func unlock(r *reporter, mu lockable, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), ttl)
	defer cancel()
	if err := mu.UnlockContext(ctx); err != nil && !errors.Is(err, dsync.ErrLost) {
		r.say("releasing lock %q failed; it expires within %v: %v", mu.Key(), ttl, oneLine(err))
	}
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
	if errors.Is(err, errNoServer) {
		code = exitUsage
	}
	return fail(cmd, code, err)
}
