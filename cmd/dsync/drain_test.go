//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader/operator"
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

// A typo is not a drain: dsync drain of a member that is not one of the
// partition's, or of a partition that has no member, exits 1, writes
// nothing, and names what it did not find and what is there (the
// partition's members; the partitions). It used to print "drained
// member ..." and exit 0 while nothing moved.
func TestDrainOfWhatIsNotThereFails(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), slow(120*time.Second))
	defer cancel()
	a := dsyncCmd(ctx, append(env(uri), "TAG=A"), "--db", db, "partition", "jobs", "--shards", "2", "--ttl", "2s",
		"--", "sh", "-c", shardScript, "sh", dir)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = a.Process.Signal(syscall.SIGTERM)
		_ = a.Wait()
	}()
	// A member owns shards once its status is written (the shards are
	// assigned over the members' statuses), and status lists the
	// partition once the shards' leases are in the directory.
	for deadline := time.Now().Add(slow(45 * time.Second)); len(running(shardLog(t, dir), "A")) != 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("A does not run the 2 shards of jobs within %v: %+v", slow(45*time.Second), shardLog(t, dir))
		}
	}
	waitListed(t, env(uri), db, operator.LockKey("jobs#0"), operator.LockKey("jobs#1"))
	host, _ := os.Hostname()
	drain := func(args ...string) outcome {
		t.Helper()
		return runDsync(t, env(uri), "", slow(30*time.Second), append([]string{"--db", db, "drain"}, args...)...)
	}
	self := fmt.Sprintf("(%s pid %d)", host, a.Process.Pid)

	// A member ID that is not jobs's: its members are listed, with the ID
	// to give.
	r := drain("jobs", "no-such-member")
	if r.code != exitFailure || !strings.Contains(r.stderr, "no-such-member") || !strings.Contains(r.stderr, self) || strings.Contains(r.stdout, "drained") {
		t.Fatalf("dsync drain jobs no-such-member: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, naming no-such-member and listing the member %s", r.code, r.stdout, r.stderr, exitFailure, self)
	}
	m := regexp.MustCompile(`(\S+) ` + regexp.QuoteMeta(self)).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("dsync drain jobs no-such-member: %q lists no member ID before %s", r.stderr, self)
	}
	id := m[1]
	// That ID in a partition that has no member: the partitions are
	// listed. Nor may --undo undrain what was never drained there.
	for _, args := range [][]string{{"jbos", id}, {"jbos", id, "--undo"}, {"jbos", host + ":" + strconv.Itoa(a.Process.Pid)}} {
		r := drain(args...)
		if r.code != exitFailure || !strings.Contains(r.stderr, `partition "jbos"`) || !strings.Contains(r.stderr, "partitions in "+db+".dsync_locks: jobs") || strings.Contains(r.stdout, "drained") {
			t.Errorf("dsync drain %s: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, naming jbos and listing jobs", strings.Join(args, " "), r.code, r.stdout, r.stderr, exitFailure)
		}
	}
	// Nothing was written: no member is drained, and A still runs both
	// shards. The ID that was listed drains A.
	if st := runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "status"); st.code != 0 || strings.Contains(st.stdout, "drained partition members:") {
		t.Errorf("dsync status after drains that failed: exit %d\n%s", st.code, st.stdout)
	}
	if r := drain("jobs", id, "--reason", "test"); r.code != 0 || !strings.Contains(r.stdout, "drained member "+id) {
		t.Errorf("dsync drain jobs %s, the ID listed: exit %d\nstdout: %s\nstderr: %s", id, r.code, r.stdout, r.stderr)
	}
}
