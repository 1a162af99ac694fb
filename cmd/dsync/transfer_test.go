//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// dsync transfer --to HOST:PID: the leader (a dsync elect) hands over at
// its next heartbeat: its command is stopped first, then the candidate
// asked for runs its own.
func TestTransferHandsTheLeadershipOver(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), slow(120*time.Second))
	defer cancel()
	script := `trap 'echo "$TAG term" >>"$1/log"; rmdir "$1/held"; exit 0' TERM
mkdir "$1/held" || echo overlap >>"$1/overlaps"
echo "$TAG run $DSYNC_TOKEN" >>"$1/log"
while :; do sleep 0.1; done`
	var procs []*exec.Cmd
	start := func(tag string) *exec.Cmd {
		cmd := dsyncCmd(ctx, append(env(uri), "TAG="+tag), "--db", db, "elect", "--ttl", "6s", "svc", "--", "sh", "-c", script, "sh", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		return cmd
	}
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait()
		}
	}()
	logged := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(slow(30 * time.Second))
		for {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			if lines := readLines(string(b)); len(lines) >= n {
				return lines
			}
			if time.Now().After(deadline) {
				t.Fatalf("log has %q; want %d lines", b, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	start("A")
	logged(1) // A runs
	b := start("B")
	// B's status must be written before it can be named: it is, once
	// status lists two candidates.
	deadline := time.Now().Add(slow(30 * time.Second))
	for {
		r := runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "status", "svc")
		if strings.Count(r.stdout, fmt.Sprint(b.Process.Pid)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B not listed by dsync status:\n%s", r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	host, _ := os.Hostname()
	to := fmt.Sprintf("%s:%d", host, b.Process.Pid)
	r := runDsync(t, env(uri), "", slow(60*time.Second), "--db", db, "transfer", "svc", "--to", to, "--reason", "upgrade")
	if r.code != 0 || !strings.Contains(r.stdout, " leads \"svc\"") {
		t.Fatalf("dsync transfer: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if lines := bRan(t, logged); !termsThenB(lines) {
		t.Errorf("log %q, want A's run, its stop, then B's run", lines)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("the commands ran at once:\n%s", b)
	}
	// A transfer to the leader itself does nothing; one to a name that
	// is no candidate fails before it writes a request.
	r = runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "transfer", "svc", "--to", to)
	if r.code != 0 || !strings.Contains(r.stdout, "already") {
		t.Errorf("dsync transfer to the leader: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "transfer", "svc", "--to", "nobody")
	if r.code != exitFailure || !strings.Contains(r.stderr, "not a live candidate") {
		t.Errorf("dsync transfer to no candidate: exit %d, stderr %q; want %d", r.code, r.stderr, exitFailure)
	}
}

// bRan waits, with logged, until the log has a line of B's run, and
// returns the log.
func bRan(t *testing.T, logged func(int) []string) []string {
	t.Helper()
	for n := 3; ; n++ {
		lines := logged(n)
		if slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "B run ") }) {
			return lines
		}
	}
}

// termsThenB reports whether lines are A's runs, each stopped, then B's
// run: A may have run more than once before the transfer (its term
// taken back after an outage of the store, which a machine too loaded
// for the store to answer for seconds is, or won again).
func termsThenB(lines []string) bool {
	n := len(lines)
	if n < 3 || n%2 == 0 || !strings.HasPrefix(lines[n-1], "B run ") {
		return false
	}
	for i := 0; i < n-1; i += 2 {
		if !strings.HasPrefix(lines[i], "A run ") || lines[i+1] != "A term" {
			return false
		}
	}
	return true
}
