//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

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
	// Long enough that a busy machine's late renewals do not lose the
	// holds before the server dies.
	const ttl = 5 * time.Second
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
		// The lines from the acquisition on: on a busy machine, a first
		// attempt that timed out says so before.
		since := res.r.stderr
		if i := strings.LastIndex(since, "acquired lock"); i >= 0 {
			since = since[i:]
		}
		if !strings.Contains(since, "lost") || strings.Count(strings.TrimSpace(since), "\n") > 3 {
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
