//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// dsync elect --progress: a command that writes to $DSYNC_PROGRESS_FD
// more often than the deadline keeps leading; once it stops writing, its
// term ends as a lost one does (the command gets SIGTERM, and dsync says
// why), and dsync campaigns again and runs it anew.
func TestElectProgressDeadline(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), slow(90*time.Second))
	defer cancel()
	// It reports for 6s, three times the deadline, then goes quiet. The
	// deadline is long enough that a busy machine does not stall a
	// command that reports every 0.1s.
	script := `trap 'echo term >>"$1/log"; exit 0' TERM
echo "run $DSYNC_TOKEN" >>"$1/log"
i=0
while [ $i -lt 60 ]; do echo . >&"$DSYNC_PROGRESS_FD"; sleep 0.1; i=$((i+1)); done
echo quiet >>"$1/log"
while :; do sleep 0.1; done`
	cmd := dsyncCmd(ctx, env(uri), "--db", db, "elect", "--ttl", "6s", "--progress", "2s", "svc", "--", "sh", "-c", script, "sh", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(slow(30 * time.Second))
	var lines []string
	for len(lines) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("log %q; want run, quiet, term, run\nstderr: %s", lines, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		lines = readLines(string(b))
	}
	if !strings.HasPrefix(lines[0], "run ") || lines[1] != "quiet" || lines[2] != "term" || !strings.HasPrefix(lines[3], "run ") || lines[0] == lines[3] {
		t.Errorf("log %q; want run, quiet (no stall while it reported), term, run in a new term", lines)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !strings.Contains(stderr.String(), "reported no progress within --progress") {
		t.Errorf("stderr does not say the command stalled:\n%s", stderr.String())
	}
	if r := runDsync(t, env(uri), "", slow(10*time.Second), "--db", db, "elect", "--progress", "1s", "svc"); r.code != exitUsage {
		t.Errorf("dsync elect --progress without a command: exit %d, want %d", r.code, exitUsage)
	}
}

// dsync partition --progress: a shard whose command stops reporting is
// stopped, as a lost shard is, and dsync says why.
func TestPartitionProgressDeadline(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), slow(90*time.Second))
	defer cancel()
	// Shard 0 reports on and on; shard 1 stops after a second.
	script := `trap 'echo "stop $DSYNC_SHARD" >>"$1/log"; exit 0' TERM
echo "run $DSYNC_SHARD" >>"$1/log"
i=0
while :; do
	if [ "$DSYNC_SHARD" = 0 ] || [ $i -lt 10 ]; then echo . >&"$DSYNC_PROGRESS_FD"; fi
	sleep 0.1; i=$((i+1))
done`
	cmd := dsyncCmd(ctx, env(uri), "--db", db, "partition", "jobs", "--shards", "2", "--ttl", "6s", "--progress", "2s", "--", "sh", "-c", script, "sh", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(slow(30 * time.Second))
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		if strings.Contains(string(b), "stop 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %q; want shard 1 stopped\nstderr: %s", b, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Shard 0, which reports, is stopped only by the SIGTERM that ends
	// dsync.
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	if lines := readLines(string(b)); slices.Contains(lines, "stop 0") {
		t.Errorf("shard 0, which reported progress, was stopped: %q", lines)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !strings.Contains(stderr.String(), "shard 1 of \"jobs\"") || !strings.Contains(stderr.String(), "reported no progress within --progress") {
		t.Errorf("stderr does not say shard 1 stalled:\n%s", stderr.String())
	}
}
