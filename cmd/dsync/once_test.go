//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// dsync once NAME runs the command to success once: concurrent ones wait
// and do not run it; a failure is run again by the next; --check says.
func TestOnceRunsACommandOnce(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	check := runDsync(t, e, "", slow(30*time.Second), "--db", db, "once", "--check", "job")
	if check.code != exitFailure {
		t.Fatalf("--check before any run: exit %d, want %d\nstderr: %s", check.code, exitFailure, check.stderr)
	}
	// A failing run: its status passes through, and it is not done.
	fail := runDsync(t, e, "", slow(30*time.Second), "--db", db, "once", "job", "--", "sh", "-c", `echo "$DSYNC_TOKEN" >>"$1"; exit 3`, "sh", runs)
	if fail.code != 3 {
		t.Fatalf("a failing command: exit %d, want 3\nstderr: %s", fail.code, fail.stderr)
	}
	script := `echo "$DSYNC_ONCE $DSYNC_TOKEN" >>"$1"; sleep 0.3`
	const n = 4
	var wg sync.WaitGroup
	outs := make([]outcome, n)
	for i := range n {
		wg.Go(func() {
			outs[i] = runDsync(t, e, "", slow(60*time.Second), "--db", db, "once", "job", "--", "sh", "-c", script, "sh", runs)
		})
	}
	wg.Wait()
	for i, o := range outs {
		if o.code != 0 {
			t.Errorf("dsync once %d: exit %d\nstderr: %s", i, o.code, o.stderr)
		}
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "job ") {
		t.Fatalf("runs:\n%s\nwant the failed one and one success", b)
	}
	check = runDsync(t, e, "", slow(30*time.Second), "--db", db, "once", "--check", "job")
	if check.code != 0 || strings.TrimSpace(check.stdout) != "done" {
		t.Fatalf("--check after the success: exit %d, stdout %q\nstderr: %s", check.code, check.stdout, check.stderr)
	}
	for _, args := range [][]string{{"once"}, {"once", "job"}, {"once", "--check", "job", "--", "true"}} {
		if r := runDsync(t, e, "", slow(30*time.Second), append([]string{"--db", db}, args...)...); r.code != exitUsage {
			t.Errorf("dsync %s: exit %d, want %d", strings.Join(args, " "), r.code, exitUsage)
		}
	}
}

// dsync lock -n N runs at most N commands at once, and does run N at once.
func TestLockNRunsAtMostN(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	// Each command makes a file of its own, counts the files, and records
	// the count; at most N can exist at once.
	script := `touch "$1/in.$$"; ls "$1" | grep -c '^in\.' >>"$2"; echo "$DSYNC_LIMIT" >>"$3"; sleep 0.4; rm "$1/in.$$"`
	counts, limits := filepath.Join(t.TempDir(), "counts"), filepath.Join(t.TempDir(), "limits")
	const procs, limit = 5, 2
	var wg sync.WaitGroup
	outs := make([]outcome, procs)
	for i := range procs {
		wg.Go(func() {
			outs[i] = runDsync(t, e, "", slow(60*time.Second), "--db", db, "lock", "-n", "2", "pool", "--", "sh", "-c", script, "sh", dir, counts, limits)
		})
	}
	wg.Wait()
	for i, o := range outs {
		if o.code != 0 {
			t.Errorf("dsync lock -n %d: exit %d\nstderr: %s", i, o.code, o.stderr)
		}
	}
	b, err := os.ReadFile(counts)
	if err != nil {
		t.Fatal(err)
	}
	seen := strings.Fields(string(b))
	if len(seen) != procs {
		t.Fatalf("%d commands ran, want %d", len(seen), procs)
	}
	shared := false
	for _, c := range seen {
		if c > "2" {
			t.Fatalf("%s commands at once (counts %v), limit %d", c, seen, limit)
		}
		shared = shared || c == "2"
	}
	if !shared {
		t.Errorf("never two commands at once (counts %v)", seen)
	}
	if l, _ := os.ReadFile(limits); strings.Count(string(l), "2\n") != procs {
		t.Errorf("DSYNC_LIMIT: %q", l)
	}
	if r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "lock", "-n", "0", "pool", "--", "true"); r.code != exitUsage {
		t.Errorf("-n 0: exit %d, want %d", r.code, exitUsage)
	}
}
