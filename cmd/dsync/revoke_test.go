//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestRevokeEndsAHolder: dsync revoke --key on a lock held by dsync lock
// waits until the holder's lease expired in store time and exits 0; the
// holder loses its hold (exit 122) and logs who revoked it and why.
// The tests' TTLs are long enough that a busy machine's late renewals
// do not lose a hold before the revoke ends it.
func TestRevokeEndsAHolder(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	dir := t.TempDir()
	cmd := dsyncCmd(ctx, e, "--db", db, "lock", "--ttl", "6s", "revoked", "--",
		"sh", "-c", `touch "$1/holding"; exec sleep 600`, "sh", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "holding"), slow(20*time.Second))
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "revoke", "--key", "revoked", "--reason", "stuck job")
	if r.code != 0 || !strings.Contains(r.stdout, "revoked session") {
		t.Fatalf("dsync revoke: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitLost {
		t.Errorf("the holder after the revoke: %v; want exit %d\nstderr: %s", err, exitLost, stderr.String())
	}
	if !strings.Contains(stderr.String(), "revoked") || !strings.Contains(stderr.String(), "stuck job") {
		t.Errorf("the holder's log does not say who revoked it and why:\n%s", stderr.String())
	}
	// The loss is put down to the revoke, not to the server.
	if lost := regexp.MustCompile(`lock "revoked" \(token \d+\) lost: session revoked by an operator by \S+ at \S+: stuck job; stopping the command`); !lost.MatchString(stderr.String()) ||
		strings.Contains(stderr.String(), "did not confirm") {
		t.Errorf("the holder's log does not put the loss down to the revoke:\n%s", stderr.String())
	}
	st := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if !strings.Contains(st.stdout, "revoked sessions:") || !strings.Contains(st.stdout, "stuck job") {
		t.Errorf("dsync status does not show the revocation:\n%s", st.stdout)
	}
	st = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json")
	if rs := parseStatusJSON(t, st.stdout).revocations; len(rs) != 1 || rs[0].Reason != "stuck job" || rs[0].At.IsZero() {
		t.Errorf("dsync status --json does not show the revocation:\n%s", st.stdout)
	}
	// A revoke by --process records when, in store time, as one by
	// --key does (it recorded the zero time: nothing had read the
	// store's clock yet).
	if r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "revoke", "--process", "c0ffeec0ffeec0ffeec0", "--reason", "by process"); r.code != 0 {
		t.Fatalf("dsync revoke --process: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	st = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	if !strings.Contains(st.stdout, "by process") || strings.Contains(st.stdout, " at 0001-") {
		t.Errorf("dsync status after a revoke by --process, want it with its time:\n%s", st.stdout)
	}
	if r := runDsync(t, e, "", slow(10*time.Second), "--db", db, "revoke", "--reason", "x"); r.code != exitUsage {
		t.Errorf("dsync revoke without --key or --process: exit %d, want %d", r.code, exitUsage)
	}
}

// TestGraceDoesNotHoldTheLock: after a loss (here a revoke), another
// process takes the lock once the lease has expired in the store, while
// the command of the holder that lost it may still run within --grace:
// what dsync lock's usage says of --grace. The holder has no outage
// grace: with one, another process that tries once, while no other
// renews, finds the lease proven ended only a grace after its expiry.
func TestGraceDoesNotHoldTheLock(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()
	dir := t.TempDir()
	// The command ignores SIGTERM and runs until told through a file.
	cmd := dsyncCmd(ctx, e, "--db", db, "--outage-grace", "0", "lock", "--ttl", "6s", "--grace", "10m", "graced", "--",
		"sh", "-c", `trap '' TERM; echo $$ > "$1/pid"; touch "$1/holding"; while [ ! -e "$1/release" ]; do sleep 0.05; done`, "sh", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "holding"), slow(30*time.Second))
	if r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "revoke", "--key", "graced", "--reason", "test"); r.code != 0 {
		t.Fatalf("dsync revoke: exit %d\nstderr: %s", r.code, r.stderr)
	}
	r := runTry(t, e, slow(30*time.Second), "--db", db, "lock", "--try", "graced", "--", "true")
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	running := syscall.Kill(pid, 0) == nil
	if r.code != 0 || !running {
		t.Errorf("dsync lock --try after the revoke: exit %d (stderr %q), the lost holder's command running: %v; want 0 while it runs", r.code, r.stderr, running)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != exitLost {
		t.Errorf("the holder that lost the lock: %v; want exit %d\nstderr: %s", err, exitLost, stderr.String())
	}
}

// TestRevokeEndsALeader: dsync revoke --key of an election's lease ends
// the leader's term; dsync elect logs who revoked it and why, and does
// not put the loss down to the server.
func TestRevokeEndsALeader(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	cmd := dsyncCmd(ctx, e, "--db", db, "elect", "--ttl", "6s", "revoked-job")
	stderr := newLineWaiter()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var log []string
	for {
		line := stderr.next(t, slow(20*time.Second))
		log = append(log, line)
		if strings.Contains(line, `leading "revoked-job"`) {
			break
		}
	}
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "revoke", "--key", "dsync:election/revoked-job", "--reason", "stuck leader")
	if r.code != 0 {
		t.Fatalf("dsync revoke: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for {
		line := stderr.next(t, slow(20*time.Second))
		log = append(log, line)
		if strings.Contains(line, `leadership of "revoked-job" lost`) {
			break
		}
	}
	all := strings.Join(log, "\n")
	if !strings.Contains(all, "stuck leader") || strings.Contains(all, "did not confirm") {
		t.Errorf("the leader's log does not put the loss down to the revoke:\n%s", all)
	}
}
