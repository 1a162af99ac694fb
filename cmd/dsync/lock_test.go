//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/mongotest"
)

func TestLockPassesExitStatusThrough(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	for _, tc := range []struct {
		name  string
		cmd   []string
		stdin string
		code  int
		out   string
	}{
		{"exit code", []string{"sh", "-c", "exit 7"}, "", 7, ""},
		{"success", []string{"true"}, "", 0, ""},
		{"killed by a signal is 128+N", []string{"sh", "-c", "kill -TERM $$"}, "", 128 + 15, ""},
		{"stdin and stdout pass through", []string{"cat"}, "hello\n", 0, "hello\n"},
		{"the token is in the environment", []string{"sh", "-c", `echo "$DSYNC_LOCK $DSYNC_TOKEN"`}, "", 0, "status-x "},
		{"not found", []string{"no-such-command-dsync-test"}, "", 127, ""},
		{"not executable", []string{"/dev/null"}, "", 126, ""},
	} {
		r := runDsync(t, e, tc.stdin, slow(30*time.Second), append([]string{"--db", db, "lock", "status-x", "--"}, tc.cmd...)...)
		if r.code != tc.code || !strings.HasPrefix(r.stdout, tc.out) {
			t.Errorf("%s: dsync lock status-x -- %s: exit %d, stdout %q; want exit %d, stdout %q...\nstderr: %s",
				tc.name, strings.Join(tc.cmd, " "), r.code, r.stdout, tc.code, tc.out, r.stderr)
		}
	}
}

func TestLockTryAndWaitGiveUpWhenHeld(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	// The command of the outer lock is an inner dsync on the same lock.
	for _, inner := range [][]string{{"--try"}, {"--wait", "300ms"}} {
		args := append([]string{"--db", db, "lock", "held", "--", dsyncBin, "--db", db, "lock", "held"}, inner...)
		r := runDsync(t, e, "", slow(30*time.Second), append(args, "--", "echo", "ran")...)
		if r.code != exitNotLocked || strings.Contains(r.stdout, "ran") {
			t.Errorf("dsync lock %s on a held lock: exit %d, stdout %q; want %d and the command not run\nstderr: %s",
				strings.Join(inner, " "), r.code, r.stdout, exitNotLocked, r.stderr)
		}
		if !strings.Contains(r.stderr, "held by") {
			t.Errorf("dsync lock %s: stderr %q does not say who holds the lock", strings.Join(inner, " "), r.stderr)
		}
		// The holder's command is the dsync that says so.
		if runtime.GOOS == "linux" && !strings.Contains(r.stderr, "running pid") {
			t.Errorf("dsync lock %s: stderr %q does not give the holder's command's pid", strings.Join(inner, " "), r.stderr)
		}
	}
}

// Several dsync lock on one name, started at once: each command checks
// that no other one runs by creating a directory (atomic, like O_EXCL);
// waiting by polling (--wakeups=false), and woken by events (the
// default, and the flag that asks for it).
func TestLockNeverRunsTwoCommandsAtOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"polling", "wakeups"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			extra := []string{"--wakeups"}
			if mode == "polling" {
				extra = []string{"--wakeups=false"}
			}
			lockNeverRunsTwoCommandsAtOnce(t, extra)
		})
	}
}

func lockNeverRunsTwoCommandsAtOnce(t *testing.T, extra []string) {
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	script := `mkdir "$1/held" || echo "overlap at token $DSYNC_TOKEN" >>"$1/overlaps"
echo "$DSYNC_TOKEN" >>"$1/runs"
sleep 0.2
rmdir "$1/held"`
	const n = 5
	var wg sync.WaitGroup
	runs := make([]outcome, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"--db", db}, extra...)
			args = append(args, "lock", "exclusive", "--", "sh", "-c", script, "sh", dir)
			runs[i] = runDsync(t, e, "", slow(60*time.Second), args...)
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if r.code != 0 {
			t.Errorf("dsync lock %d: exit %d\nstderr: %s", i, r.code, r.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("commands ran at the same time:\n%s", b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	tokens := strings.Fields(string(b))
	if len(tokens) != n {
		t.Fatalf("%d commands ran, want %d", len(tokens), n)
	}
	for i := 1; i < n; i++ {
		a, _ := strconv.Atoi(tokens[i-1])
		b, _ := strconv.Atoi(tokens[i])
		if b <= a {
			t.Errorf("tokens in the order the commands ran: %v; want increasing", tokens)
		}
	}
}

// When the server goes away, the hold ends at its local deadline: the
// command gets SIGTERM then (and SIGKILL after --grace if it ignores it),
// and dsync exits with the status of a lost lock, whatever the command's,
// as soon as the command has stopped: it waits for no request to the
// server that is gone.
func TestLockStopsCommandWhenTheLockIsLost(t *testing.T) {
	t.Parallel()
	srv := mongotest.StartProcess(t)
	e := env(srv.URI())
	dir := t.TempDir()
	const ttl = 2 * time.Second
	// Both commands write the time they got SIGTERM; one exits then, the
	// other goes on until SIGKILL (its sleeps ignore the SIGTERM sent to
	// its group, so the shell has no killed child to report).
	traps := `trap 'date +%s.%N >"$1/term"; exit 3' TERM
touch "$1/started"
while :; do sleep 0.1; done`
	ignores := `trap 'date +%s.%N >"$1/term"' TERM
touch "$1/started"
while :; do (trap '' TERM; exec sleep 0.1); done`

	type result struct {
		r      outcome
		exited time.Time
		err    error
	}
	start := func(name, script, grace string) (string, <-chan result) {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		ch := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
			defer cancel()
			cmd := dsyncCmd(ctx, e, "lock", "--ttl", ttl.String(), "--grace", grace, name, "--", "sh", "-c", script, "sh", d)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			exited := time.Now()
			if _, ok := err.(interface{ ExitCode() int }); ok {
				err = nil
			}
			ch <- result{outcome{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()}, exited, err}
		}()
		return d, ch
	}
	trapDir, trapDone := start("traps", traps, "10s")
	ignoreDir, ignoreDone := start("ignores", ignores, "500ms")
	waitFile(t, filepath.Join(trapDir, "started"), slow(30*time.Second))
	waitFile(t, filepath.Join(ignoreDir, "started"), slow(30*time.Second))

	killed := time.Now()
	srv.Kill()

	for _, c := range []struct {
		name   string
		dir    string
		done   <-chan result
		status int // the command's, which dsync reports
		// stop is how long the command takes to stop after SIGTERM: at
		// once, or --grace until SIGKILL.
		stop time.Duration
	}{
		{"a command that exits on SIGTERM", trapDir, trapDone, 3, 0},
		{"a command that ignores SIGTERM", ignoreDir, ignoreDone, 128 + int(syscall.SIGKILL), 500 * time.Millisecond},
	} {
		res := <-c.done
		if res.err != nil {
			t.Fatalf("%s: %v", c.name, res.err)
		}
		if res.r.code != exitLost {
			t.Errorf("%s: dsync exited %d, want %d, the status of a lost lock\nstderr: %s", c.name, res.r.code, exitLost, res.r.stderr)
		}
		if want := fmt.Sprintf("status %d", c.status); !strings.Contains(res.r.stderr, want) {
			t.Errorf("%s: stderr does not give the command's %s:\n%s", c.name, want, res.r.stderr)
		}
		if !strings.Contains(res.r.stderr, "lost") || strings.Count(strings.TrimSpace(res.r.stderr), "\n") > 3 {
			t.Errorf("%s: stderr should say in a few lines that the lock was lost:\n%s", c.name, res.r.stderr)
		}
		term := termTime(t, c.dir)
		// SIGTERM comes at the hold's local deadline: the last confirmed
		// renewal (a third of the TTL apart, unless the machine is slow)
		// plus the TTL minus TTL/20, between 0.62 and 0.95 TTL after the
		// kill, give or take scheduling. Not at the first failed renewal,
		// nor long after the deadline.
		after := term.Sub(killed)
		if lo, hi := ttl/4, ttl+slow(time.Second); after < lo || after > hi {
			t.Errorf("%s: SIGTERM %v after the server died; want it at the hold's local deadline, %v to %v", c.name, after, lo, hi)
		}
		// dsync exits within a second of its command's end; a second
		// more is for a busy machine's scheduling.
		exit := res.exited.Sub(term)
		if limit := c.stop + slow(2*time.Second); exit > limit {
			t.Errorf("%s: dsync exited %v after the command's SIGTERM; want it within %v (the command stops %v after it)",
				c.name, exit, limit, c.stop)
		}
		t.Logf("%s: SIGTERM %v after the server died (ttl %v), dsync exited %v later", c.name,
			after.Round(time.Millisecond), ttl, exit.Round(time.Millisecond))
	}
}

// termTime is when the command run in dir got SIGTERM, which it wrote in
// dir/term.
func termTime(t *testing.T, dir string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "term"))
	if err != nil {
		t.Fatal("the command got no SIGTERM:", err)
	}
	sec, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, int64(sec*1e9))
}

func TestLockPassesSignalsOn(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), slow(30*time.Second))
	defer cancel()
	cmd := dsyncCmd(ctx, e, "--db", db, "lock", "sig", "--", "sh", "-c",
		`trap 'exit 9' HUP; touch "$1/started"; while :; do sleep 0.1; done`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "started"), slow(20*time.Second))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 9 {
		t.Errorf("after SIGHUP to dsync, exit %d; want 9, the command's status after its HUP trap", code)
	}
}

// A command that ignores the signal dsync passes on is killed --grace
// later, with what it started in its process group: under lock and elect.
func TestLockKillsACommandThatIgnoresTheSignal(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	for _, tc := range []struct {
		cmd string
		sig syscall.Signal
	}{
		{"lock", syscall.SIGTERM}, {"lock", syscall.SIGINT}, {"lock", syscall.SIGHUP}, {"elect", syscall.SIGTERM},
	} {
		sig := tc.sig
		t.Run(tc.cmd+"/"+sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			const grace = 500 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), slow(30*time.Second))
			defer cancel()
			script := `trap '' HUP INT TERM
(trap '' HUP INT TERM; while :; do sleep 0.1; done) &
echo $! >"$1/child"
touch "$1/started"
while :; do sleep 0.1; done`
			cmd := dsyncCmd(ctx, e, "--db", db, tc.cmd, "--grace", grace.String(), "ignore-"+sig.String(), "--", "sh", "-c", script, "sh", dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFile(t, filepath.Join(dir, "started"), slow(20*time.Second))
			sent := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			took := time.Since(sent)
			if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGKILL) {
				t.Errorf("dsync exited %d after %v, want %d: the command killed\nstderr: %s", code, sig, 128+int(syscall.SIGKILL), stderr.String())
			}
			if took < grace || took > grace+slow(5*time.Second) {
				t.Errorf("dsync exited %v after %v; want the command killed --grace (%v) after it", took, sig, grace)
			}
			if !strings.Contains(stderr.String(), "SIGKILL") {
				t.Errorf("stderr does not say the command was killed:\n%s", stderr.String())
			}
			b, err := os.ReadFile(filepath.Join(dir, "child"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid, slow(5*time.Second))
		})
	}
}

// waitGone waits until process pid has exited (is gone or a zombie).
func waitGone(t *testing.T, pid int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil && syscall.Kill(pid, 0) != nil {
			return
		}
		if _, rest, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(rest, "Z") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d, started by the command, still runs %v after dsync exited", pid, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	noServer := env("")
	for _, tc := range []struct {
		args []string
		want string // in the one line on stderr
	}{
		{[]string{"lock", "--bogus", "x", "--", "true"}, "unknown flag --bogus (see 'dsync help lock')"},
		{[]string{"--bogus", "status"}, "unknown flag --bogus (see 'dsync -h')"},
		{[]string{"status", "-bogus"}, "unknown flag -bogus"},
		{[]string{"lock", "--ttl", "soon", "x", "--", "true"}, `invalid value "soon" for --ttl`},
		{[]string{"lock", "x", "--ttl"}, "flag --ttl needs a value"},
		{[]string{"lock", "--ttl", "-1s", "x", "--", "true"}, "TTL must be positive"},
		{[]string{"lock"}, "missing lock NAME"},
		{[]string{"lock", "--"}, "missing lock NAME"},
		{[]string{"elect", "x", "--listen", "--", "true"}, "--listen runs no command"},
		{[]string{"status", "a", "b"}, `unexpected argument "b"`},
		{[]string{"status", ""}, "empty name"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate" (see 'dsync -h')`},
		{[]string{"completion"}, "name one shell"},
		{[]string{"version", "x"}, `unexpected argument "x"`},
		// Names: a lock's up to dsyncmongo.MaxKeyLen bytes, an election's
		// shorter by "dsync:election/", the namespace of its lease, which
		// no lock name may enter.
		{[]string{"lock", strings.Repeat("n", maxLockName+1), "--", "true"}, "name of 513 bytes; the limit is 512"},
		{[]string{"elect", strings.Repeat("n", maxElectionName+1), "--", "true"}, "name of 498 bytes; the limit is 497"},
		{[]string{"lock", "dsync:election/x", "--", "true"}, `beginning with "dsync:" are reserved`},
		{[]string{"lock", strings.Repeat("n", maxLockName), "--", "true"}, "dsync server"},
		{[]string{"lock", "x", "--", "true"}, "dsync server"},
		{[]string{"lock", "x"}, "dsync server"},
		{[]string{"lock", "--", "-x"}, "dsync server"},
		{[]string{"status"}, "dsync server"},
		{[]string{"clock"}, "dsync server"},
		{[]string{"elect", "x", "--", "true"}, "dsync server"},
		{[]string{"elect", "x", "--listen"}, "dsync server"},
	} {
		r := runDsync(t, noServer, "", 10*time.Second, tc.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, ": dsync: ") {
			t.Errorf("dsync %s: exit %d, stderr %q; want exit %d and one line with %q, the prefix once",
				strings.Join(tc.args, " "), r.code, r.stderr, exitUsage, tc.want)
		}
	}
	for _, args := range [][]string{{"-h"}, {"help"}, {"help", "lock"}, {"lock", "-h"}, {"status", "--help"}, {"help", "help"}, {"help", "completion"}} {
		r := runDsync(t, noServer, "", 10*time.Second, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage") && !strings.Contains(r.stdout, "\nUsage") {
			t.Errorf("dsync %s: exit %d, stdout %q; want usage and exit 0", strings.Join(args, " "), r.code, r.stdout)
		}
	}
	// A command's help, however it is asked for.
	for _, tc := range []struct{ args []string }{{[]string{"--help", "lock"}}, {[]string{"-h", "once"}}, {[]string{"help", "lock"}}, {[]string{"once", "--help"}}} {
		cmd := tc.args[0]
		if strings.HasPrefix(cmd, "-") || cmd == "help" {
			cmd = tc.args[1]
		}
		r := runDsync(t, noServer, "", 10*time.Second, tc.args...)
		if want := "Usage: dsync " + cmd; r.code != 0 || !strings.HasPrefix(r.stdout, want) {
			t.Errorf("dsync %s: exit %d, stdout %q; want it to begin with %q", strings.Join(tc.args, " "), r.code, r.stdout, want)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := runDsync(t, noServer, "", 10*time.Second, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "dsync ") || !strings.Contains(r.stdout, "FerretDB") {
			t.Errorf("dsync %s: exit %d, stdout %q", args[0], r.code, r.stdout)
		}
	}
}

// Names that start with '-' are given after "--".
func TestNamesStartingWithADash(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	for _, tc := range []struct {
		args []string
		want string // on stdout
	}{
		{[]string{"lock", "--", "-x", "--", "sh", "-c", `echo "$DSYNC_LOCK"`}, "-x\n"},
		{[]string{"lock", "--", "-y", "sh", "-c", `echo "$DSYNC_LOCK"`}, "-y\n"},
		{[]string{"lock", "--ttl", "5s", "--", "--", "--", "sh", "-c", `echo "$DSYNC_LOCK"`}, "--\n"},
		{[]string{"lock", "plain", "--ttl", "5s", "sh", "-c", `echo "$DSYNC_LOCK $1"`, "sh", "--", "x"}, "plain --\n"},
	} {
		r := runDsync(t, e, "", slow(30*time.Second), append([]string{"--db", db}, tc.args...)...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("dsync %s: exit %d, stdout %q, want %q\nstderr: %s", strings.Join(tc.args, " "), r.code, r.stdout, tc.want, r.stderr)
		}
	}
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json", "--", "-x")
	if r.code != 0 || !strings.Contains(r.stdout, `"name":"-x"`) {
		t.Errorf("dsync status -- -x: exit %d, stdout %q\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// Without a command, dsync lock holds the lock until interrupted; a
// waiter says that it waits, and when it got the lock.
func TestLockWithoutACommandHoldsUntilInterrupted(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	holder := dsyncCmd(ctx, e, "--db", db, "lock", "held")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var holderErr strings.Builder
	holder.Stderr = &holderErr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	token, err := bufio.NewReader(out).ReadString('\n')
	if n, perr := strconv.ParseUint(strings.TrimSpace(token), 10, 64); err != nil || perr != nil || n == 0 {
		t.Fatalf("dsync lock held: stdout %q, %v; want its token\nstderr: %s", token, err, holderErr.String())
	}
	if r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "lock", "--try", "held", "--", "true"); r.code != exitNotLocked {
		t.Errorf("dsync lock --try on the held lock: exit %d, want %d", r.code, exitNotLocked)
	}

	waiter := dsyncCmd(ctx, e, "--db", db, "lock", "held", "--", "sh", "-c", `echo "$DSYNC_TOKEN"`)
	var waiterOut strings.Builder
	waiterErr := newLineWaiter()
	waiter.Stdout, waiter.Stderr = &waiterOut, waiterErr
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	if line := waiterErr.next(t, slow(30*time.Second)); !strings.Contains(line, `lock "held" held by`) || !strings.HasSuffix(line, "waiting") {
		t.Errorf("the waiter's first line: %q; want it to say who holds the lock and that it waits", line)
	}
	if err := holder.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(); err != nil {
		t.Errorf("dsync lock held after SIGTERM: %v, want exit 0\nstderr: %s", err, holderErr.String())
	}
	held, _ := strconv.ParseUint(strings.TrimSpace(token), 10, 64)
	next := strconv.FormatUint(held+1, 10)
	if err := waiter.Wait(); err != nil || waiterOut.String() != next+"\n" {
		t.Errorf("the waiter: %v, stdout %q; want exit 0 and token %s", err, waiterOut.String(), next)
	}
	if line := waiterErr.next(t, time.Second); !strings.Contains(line, `acquired lock "held" (token `+next+`) after`) {
		t.Errorf("the waiter's second line: %q; want it to say it got the lock", line)
	}
}

// A lineWaiter is a Writer whose lines a test can wait for.
type lineWaiter struct {
	mu    sync.Mutex
	buf   string
	lines chan string
}

func newLineWaiter() *lineWaiter { return &lineWaiter{lines: make(chan string, 100)} }

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf += string(p)
	for {
		line, rest, ok := strings.Cut(w.buf, "\n")
		if !ok {
			return len(p), nil
		}
		w.lines <- line
		w.buf = rest
	}
}

// next returns the next line, failing the test if none comes within timeout.
func (w *lineWaiter) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l := <-w.lines:
		return l
	case <-time.After(timeout):
		t.Fatalf("no line within %v", timeout)
		return ""
	}
}

// A server that cannot be reached is reported at once with the cause,
// not after --timeout: refused, unknown host, wrong credentials.
func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	const timeout = 20 * time.Second // never waited out
	withCredentials := strings.Replace(mongotest.Shared(t).URI(), "://", "://alice:secret@", 1)
	var wg sync.WaitGroup
	for _, tc := range []struct {
		uri, want string
	}{
		{"mongodb://127.0.0.1:1/", "cannot reach mongodb://127.0.0.1:1/: connection refused by 127.0.0.1:1"},
		{"mongodb://nosuchhost.invalid:27017/", `cannot reach mongodb://nosuchhost.invalid:27017/: no such host "nosuchhost.invalid"`},
		{"mongodb://nosuchhost.invalid,127.0.0.1:1/?replicaSet=rs", `no such host "nosuchhost.invalid"`},
		{withCredentials, "authentication failed at " + redact(withCredentials) + " as alice"},
	} {
		for _, args := range [][]string{
			{"lock", "x", "--", "true"},
			{"elect", "x", "--", "true"},
			{"status"},
			{"clock"},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := runDsync(t, env(tc.uri), "", 2*timeout, append([]string{"--timeout", timeout.String()}, args...)...)
				lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
				if r.code == 0 || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) {
					t.Errorf("dsync %s with %s: exit %d, stderr %q; want non-zero and one line with %q",
						strings.Join(args, " "), tc.uri, r.code, r.stderr, tc.want)
				}
				if strings.Count(r.stderr, "connection refused") > 1 || strings.Count(r.stderr, "no such host") > 1 {
					t.Errorf("dsync %s with %s: stderr %q repeats itself", strings.Join(args, " "), tc.uri, r.stderr)
				}
				if r.took > slow(5*time.Second) {
					t.Errorf("dsync %s with %s took %v; want it to fail at once", strings.Join(args, " "), tc.uri, r.took)
				}
			}()
		}
	}
	wg.Wait()
}

// readLines returns the non-empty lines of s.
func readLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// fields returns the whitespace-separated fields of the line of s that
// starts with prefix.
func fields(t *testing.T, s, prefix string) []string {
	t.Helper()
	for _, l := range readLines(s) {
		if strings.HasPrefix(l, prefix) {
			return strings.Fields(l)
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, s)
	return nil
}
