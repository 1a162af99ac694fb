//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// dsync drain HOST:PID moves every shard of that dsync partition off it,
// and none comes back over several heartbeats; a second drain record is
// harmless; --undo gives it its share again. No shard ever runs twice.
func TestDrainMovesAMembersShards(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), slow(120*time.Second))
	defer cancel()
	var procs []*exec.Cmd
	start := func(tag string) *exec.Cmd {
		cmd := dsyncCmd(ctx, append(env(uri), "TAG="+tag), "--db", db, "partition", "jobs", "--shards", "4", "--ttl", "6s", "--grace", "5s",
			"--", "sh", "-c", shardScript, "sh", dir)
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
	until := func(what string, cond func([]shardRun) bool) []shardRun {
		t.Helper()
		deadline := time.Now().Add(slow(45 * time.Second))
		for {
			runs := shardLog(t, dir)
			if cond(runs) {
				return runs
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v; runs: %+v", what, slow(45*time.Second), runs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	a := start("A")
	start("B")
	until("A and B run 2 shards each", func(r []shardRun) bool { return len(running(r, "A")) == 2 && len(running(r, "B")) == 2 })
	host, _ := os.Hostname()
	member := fmt.Sprintf("%s:%d", host, a.Process.Pid)

	drain := func(args ...string) {
		t.Helper()
		r := runDsync(t, env(uri), "", slow(30*time.Second), append([]string{"--db", db, "drain", "jobs", member}, args...)...)
		if r.code != 0 || !strings.Contains(r.stdout, "drained member ") {
			t.Fatalf("dsync drain %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
		}
	}
	drain("--reason", "maintenance")
	runs := until("B runs the 4 shards, A none", func(r []shardRun) bool {
		return len(running(r, "A")) == 0 && slices.Equal(running(r, "B"), []int{0, 1, 2, 3})
	})
	st := runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "status")
	if !strings.Contains(st.stdout, "drained partition members:") || !strings.Contains(st.stdout, fmt.Sprintf("pid %d)", a.Process.Pid)) || !strings.Contains(st.stdout, ": maintenance") {
		t.Errorf("dsync status does not show A drained:\n%s", st.stdout)
	}
	drain() // a second drain: the same state
	started := len(runs)
	time.Sleep(6 * time.Second) // a TTL: three heartbeats (TTL/3) of both members
	if runs := shardLog(t, dir); len(runs) != started {
		t.Errorf("shards ran again after the drain settled: %+v", runs[started:])
	}
	drain("--undo")
	until("A runs 2 shards again", func(r []shardRun) bool { return len(running(r, "A")) == 2 && len(running(r, "B")) == 2 })
	if st := runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "status"); strings.Contains(st.stdout, "drained partition members:") {
		t.Errorf("dsync status shows a member drained after --undo:\n%s", st.stdout)
	}
	if b, err := os.ReadFile(dir + "/overlaps"); err == nil {
		t.Errorf("a shard ran twice at once:\n%s", b)
	}

	if r := runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "drain", "jobs", host+":1"); r.code != exitFailure || !strings.Contains(r.stderr, "no member") {
		t.Errorf("dsync drain of a HOST:PID that runs no member: exit %d, stderr %q; want %d", r.code, r.stderr, exitFailure)
	}
	if r := runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "drain", "jobs"); r.code != exitUsage {
		t.Errorf("dsync drain without MEMBER: exit %d, want %d", r.code, exitUsage)
	}
}
