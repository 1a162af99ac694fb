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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// setScript marks each key its command holds ($DSYNC_LOCKS, or
// $DSYNC_LOCK) by creating a directory of its name (atomic, like O_EXCL),
// and notes an overlap when one exists: two commands that hold a key at
// once. It records its names and tokens in one line, written at once:
// commands over disjoint names run together, and two appends of one line
// could take turns with theirs.
const setScript = `keys="${DSYNC_LOCKS:-$DSYNC_LOCK}"
for k in $keys; do mkdir "$1/$k" || echo "overlap at $k: $keys" >>"$1/overlaps"; done
line="$(echo $keys) | $(echo ${DSYNC_TOKENS:-$DSYNC_TOKEN})"; echo "$line" >>"$1/runs"
sleep 0.2
for k in $keys; do rmdir "$1/$k"; done`

// TestLockSetsInOppositeOrders: dsync lock over overlapping sets of
// names, given in opposite orders, and a single lock of one of the names,
// all started at once, twice each: every one completes (a set takes its
// names in one order, so none waits for another in a cycle), and no
// command runs while another holds one of its names.
func TestLockSetsInOppositeOrders(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	names := [][]string{{"set-a", "set-b", "set-c"}, {"set-c", "set-b", "set-a"}, {"set-b", "set-a"}, {"set-c"}}
	const rounds = 2
	var wg sync.WaitGroup
	runs := make([][rounds]outcome, len(names))
	for i, ns := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range rounds {
				args := append(append([]string{"--db", db, "lock"}, ns...), "--", "sh", "-c", setScript, "sh", dir)
				runs[i][k] = runDsync(t, e, "", slow(60*time.Second), args...)
			}
		}()
	}
	wg.Wait()
	for i, rs := range runs {
		for _, r := range rs {
			if r.code != 0 {
				t.Errorf("dsync lock %s -- ...: exit %d\nstderr: %s", strings.Join(names[i], " "), r.code, r.stderr)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("commands ran while another held one of their names:\n%s", b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != rounds*len(names) {
		t.Fatalf("%d commands ran, want %d:\n%s", len(lines), rounds*len(names), b)
	}
	for _, l := range lines {
		ns, ts, _ := strings.Cut(l, "|")
		if len(strings.Fields(ns)) != len(strings.Fields(ts)) {
			t.Errorf("a command got names %q and tokens %q: want one token a name", ns, ts)
		}
	}
}

// TestLockSetTryWhenOneIsHeld: dsync lock --try over a set, one name of
// which another dsync lock holds, exits 124 without running its command,
// and names the name held and its holder.
func TestLockSetTryWhenOneIsHeld(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	args := []string{"--db", db, "lock", "try-b", "--", dsyncBin, "--db", db, "lock", "--try", "try-a", "try-b", "--", "echo", "ran"}
	r := runTry(t, e, slow(30*time.Second), args...)
	if r.code != exitNotLocked || strings.Contains(r.stdout, "ran") {
		t.Errorf("dsync lock --try try-a try-b, try-b held: exit %d, stdout %q; want %d and the command not run\nstderr: %s",
			r.code, r.stdout, exitNotLocked, r.stderr)
	}
	if !strings.Contains(r.stderr, `"try-b" not acquired: held by`) {
		t.Errorf("stderr %q does not say that try-b is held, and by whom", r.stderr)
	}
	// --wait bounds the wait for the whole set, and names the name held.
	args = []string{"--db", db, "lock", "try-b", "--", dsyncBin, "--db", db, "lock", "--wait", "300ms", "try-a", "try-b", "--", "echo", "ran"}
	r = runTry(t, e, slow(30*time.Second), args...)
	if r.code != exitNotLocked || strings.Contains(r.stdout, "ran") ||
		!strings.Contains(r.stderr, `locks "try-a", "try-b" not acquired within 300ms: "try-b" held by`) {
		t.Errorf("dsync lock --wait 300ms try-a try-b, try-b held: exit %d, stdout %q; want %d, the command not run, and try-b named held\nstderr: %s",
			r.code, r.stdout, exitNotLocked, r.stderr)
	}
}

// TestLockSetBadInput: a name given twice, no name, and -n with several
// names are usage errors (exit 2), said before any command runs.
func TestLockSetBadInput(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lock", "twice", "other", "twice", "--", "echo", "ran"}, `"twice" named twice (names 1 and 3)`},
		{[]string{"lock", "--"}, "missing lock NAME"},
		{[]string{"lock"}, "missing lock NAME"},
		{[]string{"lock", "-n", "2", "a", "b", "--", "echo", "ran"}, "-n takes one NAME, got 2"},
		{[]string{"lock", "a", "", "--", "echo", "ran"}, `NAME "": empty name`},
	} {
		r := runDsync(t, e, "", slow(30*time.Second), c.args...)
		if r.code != exitUsage || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("dsync %s: exit %d, stdout %q, stderr %q; want %d and %q",
				strings.Join(c.args, " "), r.code, r.stdout, r.stderr, exitUsage, c.want)
		}
	}
}

// TestLockSetLostStopsTheCommand: a revoke of the session of a set's
// dsync lock loses its members; the command is stopped and dsync exits
// 122, naming the set's names and tokens. The command had the names and
// their tokens in the order given.
func TestLockSetLostStopsTheCommand(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	dir := t.TempDir()
	cmd := dsyncCmd(ctx, e, "--db", db, "lock", "--ttl", "6s", "lost-b", "lost-a", "--",
		"sh", "-c", `printf '%s|%s' "$DSYNC_LOCKS" "$DSYNC_TOKENS" >"$1/env"; touch "$1/holding"; exec sleep 600`, "sh", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "holding"), slow(20*time.Second))
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^lost-b\nlost-a\|\d+ \d+$`).Match(b) {
		t.Errorf("the command's DSYNC_LOCKS|DSYNC_TOKENS: %q; want the names a line each as given, and two tokens", b)
	}
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "revoke", "--key", "lost-a", "--reason", "stuck set")
	if r.code != 0 {
		t.Fatalf("dsync revoke: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitLost {
		t.Errorf("the set's dsync lock after the revoke: %v; want exit %d\nstderr: %s", err, exitLost, stderr.String())
	}
	if !regexp.MustCompile(`locks "lost-b", "lost-a" \(tokens \d+ \d+\) lost: .*stopping the command`).MatchString(stderr.String()) {
		t.Errorf("the set's log does not say that its locks were lost:\n%s", stderr.String())
	}
}
