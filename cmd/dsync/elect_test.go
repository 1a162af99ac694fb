//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// Two candidates: one runs the command while the other stands by; when
// the command exits, its dsync resigns and exits with its status, and the
// standby runs it.
func TestElectRunsTheCommandOnOneCandidateAtATime(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	dir := t.TempDir()
	script := `mkdir "$1/held" || echo overlap >>"$1/overlaps"
echo "$DSYNC_ELECTION $DSYNC_TOKEN" >>"$1/runs"
sleep 0.5
rmdir "$1/held"
exit 5`
	var wg sync.WaitGroup
	runs := make([]outcome, 2)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = runDsync(t, e, "", slow(60*time.Second), "--db", db, "elect", "singleton", "--", "sh", "-c", script, "sh", dir)
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if r.code != 5 {
			t.Errorf("dsync elect %d: exit %d, want 5, the command's\nstderr: %s", i, r.code, r.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("commands ran at the same time:\n%s", b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readLines(string(b)); len(got) != 2 || got[0] == got[1] || !strings.HasPrefix(got[0], "singleton ") {
		t.Errorf("runs: %q; want two, each with the election and its own term", got)
	}
}

// When leadership is lost, the command is stopped; when the server is
// back, dsync is elected again and runs it anew: in the same term, with
// the same token, where the outage of the whole store was within the
// outage grace (the default), and in a new term without a grace. A signal
// to dsync goes to the command, and ends dsync with the command's status.
func TestElectStopsTheCommandOnLossAndCampaignsAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		flags    []string
		sameTerm bool
	}{
		{"default outage grace", nil, true},
		{"no outage grace", []string{"--outage-grace", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			electAgainAfterARestart(t, tc.flags, tc.sameTerm)
		})
	}
}

// electAgainAfterARestart runs dsync elect with flags, stops and restarts
// its server, and checks the command ran twice: with the same token if
// sameTerm, else with a new one.
func electAgainAfterARestart(t *testing.T, flags []string, sameTerm bool) {
	srv := mongotest.StartProcess(t)
	e := env(srv.URI())
	dir := t.TempDir()
	script := `echo "run $DSYNC_TOKEN" >>"$1/log"
trap 'echo term >>"$1/log"; exit 0' TERM
while :; do sleep 0.1; done`
	ctx, cancel := context.WithTimeout(context.Background(), slow(90*time.Second))
	defer cancel()
	args := append(append([]string{}, flags...), "elect", "--ttl", "6s", "--grace", "5s", "svc", "--", "sh", "-c", script, "sh", dir)
	cmd := dsyncCmd(ctx, e, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logged := func(n int) {
		t.Helper()
		deadline := time.Now().Add(slow(30 * time.Second))
		for {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			if len(readLines(string(b))) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("log has %q; want %d lines\nstderr: %s", b, n, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	logged(1) // run
	srv.Kill()
	logged(2) // term
	srv.Restart()
	logged(3) // run again
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	logged(4) // term
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	lines := readLines(string(b))
	switch {
	case len(lines) != 4 || !strings.HasPrefix(lines[0], "run ") || lines[1] != "term" || !strings.HasPrefix(lines[2], "run ") || lines[3] != "term":
		t.Errorf("log:\n%s\nwant run, term, run, term", b)
	case sameTerm && lines[0] != lines[2]:
		t.Errorf("log:\n%s\nwant the second run in the same term, with the same token: the outage was within the grace", b)
	case !sameTerm && lines[0] == lines[2]:
		t.Errorf("log:\n%s\nwant the second run in a new term, with a new token", b)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("dsync elect exited %d after SIGTERM; want 0, the command's status\nstderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "lost") {
		t.Errorf("stderr does not say leadership was lost:\n%s", stderr.String())
	}
}

// Without a command, dsync elect leads until interrupted and prints each
// term's token; a standby says who leads; --listen prints each leader.
func TestElectWithoutACommandAndListen(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	defer cancel()
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr *lineWaiter
	}
	start := func(args ...string) *proc {
		p := &proc{cmd: dsyncCmd(ctx, e, append([]string{"--db", db, "elect"}, args...)...), stdout: newLineWaiter(), stderr: newLineWaiter()}
		p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stop := func(name string, p *proc) {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s after SIGTERM: %v, want exit 0", name, err)
		}
	}
	wait := slow(30 * time.Second)

	a := start("--ttl", "6s", "--version", "va", "svc")
	term := a.stdout.next(t, wait)
	if n, err := strconv.ParseUint(term, 10, 64); err != nil || n == 0 {
		t.Fatalf("the first candidate printed %q, want its term", term)
	}
	if got := a.stderr.next(t, wait); got != `dsync: leading "svc" (term `+term+`) until interrupted` {
		t.Errorf("the first candidate said %q", got)
	}
	listener := start("svc", "--listen")
	if got := listener.stdout.next(t, wait); !strings.HasPrefix(got, "term="+term+" host=") || !strings.HasSuffix(got, ` version="va"`) {
		t.Errorf("--listen printed %q, want term %s led by va", got, term)
	}
	b := start("--ttl", "6s", "--version", "vb", "svc")
	if got := b.stderr.next(t, wait); !strings.HasPrefix(got, `dsync: standing by for "svc": led by `) || !strings.Contains(got, "term "+term) {
		t.Errorf("the second candidate said %q, want it to stand by", got)
	}
	stop("the first candidate", a)
	first, _ := strconv.ParseUint(term, 10, 64)
	term2 := strconv.FormatUint(first+1, 10)
	if got := b.stdout.next(t, wait); got != term2 {
		t.Errorf("the second candidate printed %q, want its term, %s", got, term2)
	}
	if got := listener.stdout.next(t, wait); !strings.HasPrefix(got, "term="+term2+" host=") || !strings.HasSuffix(got, ` version="vb"`) {
		t.Errorf("--listen printed %q, want term %s led by vb", got, term2)
	}
	stop("the second candidate", b)
	stop("the listener", listener)
}

// Older releases kept the leases of elections in a collection of their
// own, which --elections named. While a candidate of such a release holds
// the election there, dsync elect refuses to lead beside it; --elections
// says where to look, so a command line that moved the leases in an older
// release keeps the check.
func TestElectRefusesToLeadBesideAnOlderRelease(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	e := env(uri)
	db := mongotest.DatabaseName(t)
	// What a candidate of an older release leaves while it leads "old":
	// its claim of the lease "leader/old" in its election collection, and
	// its session, alive for an hour, in that collection's sessions.
	// (Written here by hand: this release writes no such thing.)
	ctx, cancel := context.WithTimeout(context.Background(), slow(30*time.Second))
	defer cancel()
	d := mongotest.NewClient(t, uri).Database(db)
	if _, err := d.Collection("old_elections").InsertOne(ctx, bson.D{
		{Key: "_id", Value: "leader/old@1"}, {Key: "kind", Value: "claim"}, {Key: "key", Value: "leader/old"},
		{Key: "epoch", Value: 1}, {Key: "nonce", Value: "n1"}, {Key: "session", Value: "s1"},
		{Key: "owner", Value: "o1"}, {Key: "host", Value: "elsewhere"}, {Key: "pid", Value: 1}, {Key: "at", Value: time.Now()},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Collection("old_elections_sessions").InsertOne(ctx, bson.D{
		{Key: "_id", Value: "s1"}, {Key: "expiresAt", Value: time.Now().Add(time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	r := runDsync(t, e, "", slow(30*time.Second), "--db", db, "--elections", "old_elections", "elect", "old", "--", "touch", ran)
	if r.code != exitDsync || !strings.Contains(r.stderr, "older dsync release") || len(readLines(r.stderr)) != 1 {
		t.Errorf("dsync --elections old_elections elect old, led by an older release: exit %d, stderr %q; want %d and one line saying so",
			r.code, r.stderr, exitDsync)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the command ran beside the older release's leader")
	}
	// Without --elections, the default collection, where the older
	// release left nothing, is read: dsync leads.
	r = runDsync(t, e, "", slow(30*time.Second), "--db", db, "elect", "old", "--", "touch", ran)
	if _, err := os.Stat(ran); r.code != 0 || err != nil {
		t.Errorf("dsync elect old, with nothing in the default collection of older releases: exit %d, command run: %v; want 0 and run\nstderr: %s",
			r.code, err == nil, r.stderr)
	}
}
