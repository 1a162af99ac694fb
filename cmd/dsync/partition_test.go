//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// shardScript is the command dsync partition runs for each shard in the
// tests: it logs "TAG run PARTITION SHARD SHARDS TOKEN" (TAG is the
// dsync process's, from its environment) and "TAG stop SHARD" when
// stopped (its trap set first, so that a run logged is one that logs
// its stop), leaves its process group's id in pid.TAG.SHARD, and marks the
// shard held with a directory, so that two commands of one shard at once
// log an overlap.
const shardScript = `trap 'rmdir "$1/held.$DSYNC_SHARD"; echo "$TAG stop $DSYNC_SHARD" >>"$1/log"; exit 0' TERM
echo "$TAG run $DSYNC_PARTITION $DSYNC_SHARD $DSYNC_SHARDS $DSYNC_TOKEN" >>"$1/log"
echo $$ >"$1/pid.$TAG.$DSYNC_SHARD"
mkdir "$1/held.$DSYNC_SHARD" || echo "overlap $DSYNC_SHARD" >>"$1/overlaps"
while :; do sleep 0.1; done`

// A shardRun is one run of a shard's command, as shardScript logs it.
type shardRun struct {
	tag, partition string
	shard, shards  int
	token          uint64
	stopped        bool
}

// shardLog reads dir's log: the runs, in the order they started, with
// whether each was stopped.
func shardLog(t *testing.T, dir string) []shardRun {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	var runs []shardRun
	for _, line := range readLines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) == 6 && f[1] == "run":
			s, err1 := strconv.Atoi(f[3])
			n, err2 := strconv.Atoi(f[4])
			tok, err3 := strconv.ParseUint(f[5], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("log line %q: want TAG run PARTITION SHARD SHARDS TOKEN", line)
			}
			runs = append(runs, shardRun{tag: f[0], partition: f[2], shard: s, shards: n, token: tok})
		case len(f) == 3 && f[1] == "stop":
			s, _ := strconv.Atoi(f[2])
			// The last run of that shard by that tag stopped.
			for i := len(runs) - 1; i >= 0; i-- {
				if runs[i].tag == f[0] && runs[i].shard == s && !runs[i].stopped {
					runs[i].stopped = true
					break
				}
			}
		default:
			t.Fatalf("log line %q", line)
		}
	}
	return runs
}

// running is the shards whose command tag runs, sorted.
func running(runs []shardRun, tag string) []int {
	var s []int
	for _, r := range runs {
		if r.tag == tag && !r.stopped {
			s = append(s, r.shard)
		}
	}
	slices.Sort(s)
	return s
}

// Two processes share a partition of 4 shards: the first runs all four
// commands, each with its shard, the shard count and its own token; the
// second, joining, gets two, each handed over after its command on the
// first was stopped; when the first is killed (with its commands, as
// with its machine), the second runs all four, in terms of higher
// tokens; SIGTERM makes it stop them and exit 0.
func TestPartitionRunsACommandPerOwnedShard(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), slow(120*time.Second))
	defer cancel()
	start := func(tag string) (*exec.Cmd, *strings.Builder) {
		cmd := dsyncCmd(ctx, append(env(uri), "TAG="+tag), "--db", db, "partition", "jobs", "--shards", "4", "--ttl", "6s", "--grace", "5s",
			"--", "sh", "-c", shardScript, "sh", dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr
	}
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

	a, aErr := start("A")
	runs := until("A runs the 4 shards", func(r []shardRun) bool { return slices.Equal(running(r, "A"), []int{0, 1, 2, 3}) })
	firstToken := map[int]uint64{}
	for _, r := range runs {
		if r.partition != "jobs" || r.shards != 4 || r.token == 0 {
			t.Errorf("run %+v: want partition jobs, 4 shards and a token", r)
		}
		firstToken[r.shard] = r.token
	}

	b, bErr := start("B")
	runs = until("B gets 2 shards, A keeps 2", func(r []shardRun) bool {
		return len(running(r, "B")) == 2 && len(running(r, "A")) == 2
	})
	both := append(running(runs, "A"), running(runs, "B")...)
	if slices.Sort(both); !slices.Equal(both, []int{0, 1, 2, 3}) {
		t.Errorf("A runs %v and B %v: want the 4 shards between them", running(runs, "A"), running(runs, "B"))
	}
	for _, r := range runs {
		if r.tag == "B" && r.token <= firstToken[r.shard] {
			t.Errorf("B's run of shard %d has token %d, not above A's %d", r.shard, r.token, firstToken[r.shard])
		}
	}

	checkShardStatus(t, uri, db, runs, map[string]int{"A": a.Process.Pid, "B": b.Process.Pid})

	// A's machine dies: dsync and its commands, at once.
	aShards := running(runs, "A")
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	for _, s := range aShards {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("pid.A.%d", s)))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			t.Fatalf("pid of A's command of shard %d: %q, %v", s, b, err)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL) // its process group
		// Killed, it may not have said it stopped (on Linux, it got
		// SIGTERM as dsync died, and may have): the test clears its
		// mark. B cannot own the shard before A's lease expired.
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("held.%d", s))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	runs = until("B runs the 4 shards after A was killed", func(r []shardRun) bool { return slices.Equal(running(r, "B"), []int{0, 1, 2, 3}) })
	// Tokens rise from run to run of a shard, but a run by the process
	// whose term it was, with the same token: its term taken back after
	// an outage of the store (a machine too loaded for the store to
	// answer anyone for seconds is one).
	type term struct {
		tag   string
		token uint64
	}
	last := map[int]term{}
	for _, r := range runs {
		l := last[r.shard]
		if r.token < l.token || r.token == l.token && r.tag != l.tag {
			t.Errorf("shard %d: %s's token %d after %s's %d; want increasing tokens", r.shard, r.tag, r.token, l.tag, l.token)
		}
		last[r.shard] = term{r.tag, r.token}
	}

	if err := b.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err != nil {
		t.Errorf("B after SIGTERM: %v, want exit 0\nstderr: %s", err, bErr)
	}
	if left := running(shardLog(t, dir), "B"); len(left) > 0 {
		t.Errorf("B exited with the commands of shards %v not stopped", left)
	}
	// B left gracefully: it released the shards' leases rather than let
	// them run out (--ttl 2s), so at once nobody owns them.
	r := runDsync(t, env(uri), "", slow(30*time.Second), "--db", db, "status", "jobs", "--json")
	st := parseStatusJSON(t, r.stdout)
	for _, p := range st.partitions {
		for _, sh := range p.Shards {
			if sh.Owner != nil {
				t.Errorf("after B left, shard %d is still owned: %+v", sh.Shard, sh.Owner)
			}
		}
	}
	if len(st.partitions) != 1 {
		t.Errorf("dsync status jobs --json after B left: exit %d, no partition\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if o, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("two commands of one shard ran at once:\n%s\nA: %s\nB: %s", o, aErr, bErr)
	}
}

// checkShardStatus checks that dsync status, in JSON and in its table,
// shows each shard of "jobs" owned by the dsync process whose command
// runs it (pids: by tag), with that command's token.
func checkShardStatus(t *testing.T, uri, db string, runs []shardRun, pids map[string]int) {
	t.Helper()
	e := env(uri)
	waitListed(t, e, db, "dsync:election/jobs#0", "dsync:election/jobs#1", "dsync:election/jobs#2", "dsync:election/jobs#3")
	want := map[int]shardRun{}
	for _, r := range runs {
		if !r.stopped {
			want[r.shard] = r
		}
	}
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "--json")
	st := parseStatusJSON(t, r.stdout)
	if r.code != 0 || len(st.partitions) != 1 || st.partitions[0].Name != "jobs" || len(st.partitions[0].Shards) != 4 || len(st.elections) != 0 {
		t.Fatalf("dsync status --json: exit %d, partitions %+v, elections %+v; want jobs with 4 shards, and no election besides\n%s\nstderr: %s",
			r.code, st.partitions, st.elections, r.stdout, r.stderr)
	}
	p := st.partitions[0]
	for i, sh := range p.Shards {
		w := want[i]
		if sh.Shard != i || sh.Election != fmt.Sprintf("jobs#%d", i) || sh.Key != "dsync:election/"+sh.Election || sh.Owner == nil ||
			sh.Owner.PID != pids[w.tag] || sh.Owner.Term != w.token || sh.Owner.ExpiresInMS <= 0 {
			t.Errorf("status --json shard %d: %+v (owner %+v); want owned by %s (pid %d) with token %d", i, sh, sh.Owner, w.tag, pids[w.tag], w.token)
		}
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "status")
	host, _ := os.Hostname()
	for i := range 4 {
		w := want[i]
		// PARTITION SHARD TOKEN HOST PID EXPIRES IN
		var f []string
		for _, l := range readLines(r.stdout) {
			if lf := strings.Fields(l); len(lf) > 1 && lf[0] == "jobs" && lf[1] == strconv.Itoa(i) {
				f = lf
			}
		}
		if len(f) != 6 || f[2] != strconv.FormatUint(w.token, 10) || f[3] != host || f[4] != strconv.Itoa(pids[w.tag]) {
			t.Errorf("status table, shard %d: %q; want token %d, host %s, pid %d\n%s", i, f, w.token, host, pids[w.tag], r.stdout)
		}
	}
	if strings.Contains(r.stdout, "jobs#") {
		t.Errorf("status table lists the shards as elections too:\n%s", r.stdout)
	}
	// By name: the partition's shards, the same lines.
	named := runDsync(t, e, "", slow(30*time.Second), "--db", db, "status", "jobs")
	var shardLines []string
	for _, l := range readLines(named.stdout) {
		if strings.HasPrefix(l, "jobs ") {
			shardLines = append(shardLines, l)
		}
	}
	// After the line that names the database, the table of shards.
	if named.code != 0 || len(shardLines) != 4 || !strings.HasPrefix(readLines(named.stdout)[1], "PARTITION") {
		t.Errorf("dsync status jobs: exit %d, want the 4 shards alone\n%s\nstderr: %s", named.code, named.stdout, named.stderr)
	}
}

// A shard's command that exits by itself ends dsync partition with its
// status, after the other shards' commands were stopped; a command that
// cannot be found is reported before anything is joined.
func TestPartitionExitsWithACommandsStatus(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	// Shard 1 exits 3 at once; shard 0 runs until stopped, and says so.
	script := `if [ "$DSYNC_SHARD" = 1 ]; then until [ -e "$1/started.0" ]; do sleep 0.05; done; exit 3; fi
trap 'echo stopped >"$1/stopped.0"; exit 0' TERM
touch "$1/started.0"
while :; do sleep 0.1; done`
	r := runDsync(t, e, "", slow(60*time.Second), "--db", db, "partition", "once-more", "--shards", "2", "--", "sh", "-c", script, "sh", dir)
	if r.code != 3 {
		t.Errorf("dsync partition: exit %d, want 3, the command's\nstderr: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "stopped.0")); err != nil {
		t.Errorf("shard 0's command was not stopped before dsync exited: %v\nstderr: %s", err, r.stderr)
	}
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "partition", "x", "--shards", "2", "--", "no-such-command-dsync")
	if r.code != exitNotFound || !strings.Contains(r.stderr, "command not found") {
		t.Errorf("dsync partition -- no-such-command: exit %d, stderr %q; want %d, command not found", r.code, r.stderr, exitNotFound)
	}
}

// A command that is found but cannot be started (its interpreter is
// missing) ends dsync partition with 126, rather than being tried again
// and again.
func TestPartitionCommandThatCannotStart(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	script := filepath.Join(t.TempDir(), "job")
	if err := os.WriteFile(script, []byte("#!/nonexistent/dsync-test-shell\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runDsync(t, e, "", slow(60*time.Second), "--db", db, "partition", "broken", "--shards", "2", "--", script)
	if r.code != exitNoExec || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("dsync partition -- %s: exit %d, stderr %q; want %d and one line", script, r.code, r.stderr, exitNoExec)
	}
}
