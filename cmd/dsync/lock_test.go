//go:build unix

package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
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
		r := runTry(t, e, slow(30*time.Second), append(args, "--", "echo", "ran")...)
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
// waiting by polling (--wakeups=false), woken by events (the default,
// and the flag that asks for it), and woken by direct hints with events
// off.
func TestLockNeverRunsTwoCommandsAtOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"polling", "wakeups", "hints"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			extra := []string{"--wakeups"}
			switch mode {
			case "polling":
				extra = []string{"--wakeups=false"}
			case "hints":
				extra = []string{"--wakeups=false", "--hints", "127.0.0.1:0"}
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
	if r := runTry(t, e, slow(30*time.Second), "--db", db, "lock", "--try", "held", "--", "true"); r.code != exitNotLocked {
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
	if line := waiterErr.next(t, slow(time.Second)); !strings.Contains(line, `acquired lock "held" (token `+next+`) after`) {
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

// next returns the next line, failing the test if none comes within
// timeout. It skips the warnings of a leader's heartbeat that timed out,
// which a busy machine's server causes between the lines a test awaits.
func (w *lineWaiter) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-w.lines:
			if strings.Contains(l, "leader: heartbeat: ") {
				continue
			}
			return l
		case <-deadline:
			t.Fatalf("no line within %v", timeout)
			return ""
		}
	}
}
