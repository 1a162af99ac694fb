//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// dsyncBin is the dsync binary the tests run, built once by TestMain.
var dsyncBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// The parallel tests wait (on dsync processes, their leases and the
	// server) rather than compute: four at a time.
	mongotest.ParallelAtLeast(4)
	dir, err := os.MkdirTemp("", "dsync-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	dsyncBin = filepath.Join(dir, "dsync")
	if err := build(dsyncBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := mongotest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	return code
}

// build builds this package into out, with the race detector when the
// tests have it.
func build(out string) error {
	gotool := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gotool); os.Getenv("GOROOT") == "" || err != nil {
		if gotool, err = exec.LookPath("go"); err != nil {
			return fmt.Errorf("no go command to build dsync with: %w", err)
		}
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(gotool, append(args, ".")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, b)
	}
	return nil
}

// An outcome is what a finished dsync process did.
type outcome struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// env is an environment for dsync: the test's, with MONGODB_URI set to
// uri (or unset when uri is empty).
func env(uri string) []string {
	var e []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MONGODB_URI=") {
			e = append(e, kv)
		}
	}
	if uri != "" {
		e = append(e, "MONGODB_URI="+uri)
	}
	return e
}

// dsyncCmd returns dsync with args, in a session of its own: without a
// controlling terminal, as under cron or systemd, whatever runs the tests.
// Unless args set --timeout, it is slow(20s): the default, 10 s, is too
// short for a server on a machine busy at four times its cores, and a
// request that times out fails the command.
func dsyncCmd(ctx context.Context, environ []string, args ...string) *exec.Cmd {
	if !slices.Contains(args, "--timeout") {
		args = append([]string{"--timeout", slow(20 * time.Second).String()}, args...)
	}
	cmd := exec.CommandContext(ctx, dsyncBin, args...)
	cmd.Env = environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runDsync runs dsync with args to completion, for at most timeout.
func runDsync(t *testing.T, environ []string, stdin string, timeout time.Duration, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := dsyncCmd(ctx, environ, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := outcome{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("dsync %s: still running after %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), timeout, r.stdout, r.stderr)
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("dsync %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// runTry runs dsync with args, a lock --try, to completion, again while
// it fails with exitDsync: its attempt is bounded by the library's try
// timeout (2 s), which a busy machine's server can outlast. Any other
// status is the try's answer.
func runTry(t *testing.T, environ []string, timeout time.Duration, args ...string) outcome {
	t.Helper()
	for i := 0; ; i++ {
		r := runDsync(t, environ, "", timeout, args...)
		if r.code != exitDsync || i == 4 {
			return r
		}
		t.Logf("dsync %s: exit %d, again\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listedWithin bounds the waits of untilListed and waitListed. The
// library records a key in the directory that status lists in the
// background, so that a claim never waits for it: a status run just
// after a claim may not list the key yet. A put that fails (FerretDB
// answers "database is locked" under load) is tried again a second
// later, then after pauses that double.
const listedWithin = time.Minute

// listedPattern is what dsync status --json prints of key, as stored.
func listedPattern(key string) string {
	b, err := json.Marshal(key)
	if err != nil {
		panic(err)
	}
	return `"key":` + string(b)
}

// untilListed is a shell command that waits, polling, until dsync status
// --json lists every one of keys (as stored), for listedWithin at most.
// run is how the script runs dsync (say "$0" --db "$1"). The command
// succeeds either way: the status that the script runs next shows what
// is listed.
func untilListed(run string, keys ...string) string {
	var cond []string
	for _, k := range keys {
		cond = append(cond, `printf '%s' "$out" | grep -qF `+shellQuote(listedPattern(k)))
	}
	return fmt.Sprintf(`end=$(($(date +%%s) + %d)); until out=$(%s status --json) && %s || [ "$(date +%%s)" -ge "$end" ]; do sleep 0.1; done`,
		int(listedWithin/time.Second), run, strings.Join(cond, " && "))
}

// waitListed waits, polling, until dsync status --json lists every one
// of keys (as stored) in db, for listedWithin at most.
func waitListed(t *testing.T, environ []string, db string, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(listedWithin)
	for {
		r := runDsync(t, environ, "", slow(30*time.Second), "--db", db, "status", "--json")
		missing := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return r.code == 0 && strings.Contains(r.stdout, listedPattern(k)) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dsync status --json did not list %q within %v: exit %d\n%s\nstderr: %s", missing, listedWithin, r.code, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// slow scales timing bounds, which only stop a test that waits in vain:
// a busy machine (the suite must pass beside CPU burners at four times
// the cores) slows dsync, its commands and the embedded server
// several-fold, and the race detector as much again.
func slow(d time.Duration) time.Duration {
	if raceEnabled {
		return 9 * d
	}
	return 3 * d
}
