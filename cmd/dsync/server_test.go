//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// A serverProc is a running dsync server.
type serverProc struct {
	uri       string
	lines     []string       // what it printed before "Ctrl-C to stop."
	stop      func() outcome // sends SIGTERM and waits for the exit
	interrupt func()         // sends SIGTERM, and returns at once
	wait      func() outcome // waits for the exit (after interrupt)
}

// startServer runs dsync server with args, returning once it listens.
func startServer(t *testing.T, environ []string, args ...string) *serverProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), slow(60*time.Second))
	cmd := dsyncCmd(ctx, environ, append([]string{"server", "--addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProc{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "Ctrl-C to stop." {
		p.lines = append(p.lines, sc.Text())
		if uri, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "export MONGODB_URI="); ok {
			p.uri = uri
		}
	}
	exited := false
	p.wait = func() outcome {
		if !exited {
			exited = true
			_, _ = io.Copy(io.Discard, out)
			_ = cmd.Wait()
			cancel()
		}
		return outcome{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()}
	}
	p.stop = func() outcome {
		if !exited {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		return p.wait()
	}
	p.interrupt = func() { _ = cmd.Process.Signal(syscall.SIGTERM) }
	t.Cleanup(func() { p.stop() })
	if p.uri == "" {
		r := p.stop()
		t.Fatalf("dsync server %s did not start: exit %d\nstdout: %q\nstderr: %s", strings.Join(args, " "), r.code, p.lines, r.stderr)
	}
	return p
}

// tokenOf runs dsync lock NAME against uri and returns its command's
// DSYNC_TOKEN.
func tokenOf(t *testing.T, uri, name string) string {
	t.Helper()
	r := runDsync(t, env(uri), "", slow(30*time.Second), "lock", name, "--", "sh", "-c", `echo "$DSYNC_TOKEN"`)
	if r.code != 0 {
		t.Fatalf("dsync lock %s: exit %d\nstderr: %s", name, r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// A restarted server knows the locks of the one before: tokens go on
// from where they were, so no waiter is handed a lock its old holder
// may still use. One server at a time uses a data directory.
func TestServerKeepsLocksAcrossRestarts(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	e := append(env(""), "XDG_STATE_HOME="+state)
	want := filepath.Join(state, "dsync", "server")

	first := startServer(t, e)
	if !strings.Contains(first.lines[0], "data in "+want+", new") {
		t.Errorf("first start: %q; want the default data directory %s, new", first.lines[0], want)
	}
	firstToken, err := strconv.ParseUint(tokenOf(t, first.uri, "kept"), 10, 64)
	if err != nil || firstToken == 0 {
		t.Fatalf("first hold: token %d, %v; want a token", firstToken, err)
	}
	busy := runDsync(t, e, "", slow(30*time.Second), "server", "--addr", "127.0.0.1:0")
	if busy.code != exitFailure || !strings.Contains(busy.stderr, "in use") {
		t.Errorf("a second server on the same data: exit %d, stderr %q; want %d and the directory in use", busy.code, busy.stderr, exitFailure)
	}
	if r := first.stop(); r.code != 0 {
		t.Fatalf("stopping the server: exit %d\nstderr: %s", r.code, r.stderr)
	}

	second := startServer(t, e)
	if !strings.Contains(second.lines[0], "kept from an earlier run") {
		t.Errorf("restart: %q; want it to say the data was kept", second.lines[0])
	}
	if got := tokenOf(t, second.uri, "kept"); got != strconv.FormatUint(firstToken+1, 10) {
		t.Errorf("hold after a restart: token %q, want %d (the next after the first run's)", got, firstToken+1)
	}

	// Started while the one before is still stopping (a client connected
	// makes FerretDB wait for it), a server waits for the data directory.
	client := mongotest.NewClient(t, second.uri)
	if err := client.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	second.interrupt()
	third := startServer(t, e)
	if !strings.Contains(third.lines[0], "kept from an earlier run") {
		t.Errorf("a restart at once: %q; want the data kept", third.lines[0])
	}
	if r := second.wait(); r.code != 0 {
		t.Errorf("the server stopped for the restart: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if got := tokenOf(t, third.uri, "kept"); got != strconv.FormatUint(firstToken+2, 10) {
		t.Errorf("hold after a restart at once: token %q, want %d", got, firstToken+2)
	}
	third.stop()

	// --data names the directory; --temp forgets, and says so loudly.
	data := filepath.Join(t.TempDir(), "here")
	named := startServer(t, e, "--data", data)
	if !strings.Contains(named.lines[0], "data in "+data+", new") {
		t.Errorf("--data %s: %q", data, named.lines[0])
	}
	named.stop()
	if _, err := os.Stat(filepath.Join(data, lockFile)); err != nil {
		t.Errorf("--data %s holds no data after a run: %v", data, err)
	}
	// A new server's tokens start from its clock (2^20 a second), as the
	// help and the warning say, not at 1.
	started := time.Now()
	temp := startServer(t, e, "--temp")
	if all := strings.Join(temp.lines, "\n"); !strings.Contains(all, "removed on exit") || !strings.Contains(all, "WARNING") || strings.Contains(all, "token 1") {
		t.Errorf("--temp: %q; want a warning that the locks are forgotten (and no tokens at 1)", all)
	}
	got, err := strconv.ParseUint(tokenOf(t, temp.uri, "kept"), 10, 64)
	if fromClock := uint64(started.Unix()-60) << 20; err != nil || got < fromClock {
		t.Errorf("hold on a --temp server: token %d (%v), want one from the server's clock, at least %d", got, err, fromClock)
	}
	for _, wrong := range []string{"token 1", "at 1 again"} {
		if strings.Contains(serverHelp(), wrong) {
			t.Errorf("dsync help server says %q: a new server's tokens start from its clock", wrong)
		}
	}
	temp.stop()

	if r := runDsync(t, e, "", slow(10*time.Second), "server", "--temp", "--data", data); r.code != exitUsage {
		t.Errorf("--temp with --data: exit %d, want %d", r.code, exitUsage)
	}
}
