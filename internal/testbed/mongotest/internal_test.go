package mongotest

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// No engine: a missing unix socket must be recognised at once.
func TestDockerAbsentFailsFast(t *testing.T) {
	t.Setenv("DSYNC_MONGOTEST_DOCKER", "")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-such.sock"))
	start := time.Now()
	if _, err := startDocker(); err != errNoDocker {
		t.Fatalf("startDocker() error = %v, want errNoDocker", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

// An endpoint that accepts connections but never answers must not hang.
func TestDockerSilentEngineFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c // hold it open, say nothing
		}
	}()
	defer func() {
		l.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	t.Setenv("DSYNC_MONGOTEST_DOCKER", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	start := time.Now()
	if _, err := startDocker(); err != errNoDocker {
		t.Fatalf("startDocker() error = %v, want errNoDocker", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

// An engine that answers ping but cannot run the deployment yields a real
// error, with the dockerserver child's stderr (Shared then logs it and
// falls back to FerretDB).
func TestDockerBrokenEngineReportsError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			_, _ = w.Write([]byte("OK"))
			return
		}
		http.Error(w, `{"message":"fake engine"}`, http.StatusInternalServerError)
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	t.Setenv("DSYNC_MONGOTEST_DOCKER", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	_, err = startDocker()
	if err == nil || err == errNoDocker || !strings.Contains(err.Error(), "fake engine") {
		t.Fatalf("startDocker() error = %v, want the engine's error", err)
	}
	t.Logf("error as reported: %v", err)

	t.Setenv("DSYNC_MONGOTEST_DOCKER", "0")
	if _, err := startDocker(); err != errNoDocker {
		t.Fatalf("DSYNC_MONGOTEST_DOCKER=0: error = %v, want errNoDocker", err)
	}
}

// Without a Docker engine the harness falls through to the embedded
// FerretDB, and builds no dockerserver for it; a topology asked for by
// name gets no fallback, so that a run meant for a sharded cluster never
// passes on FerretDB.
func TestResolveWithoutDocker(t *testing.T) {
	t.Setenv("MONGODB_URI", "")
	t.Setenv("DSYNC_MONGOTEST_DOCKER", "")
	t.Setenv("DSYNC_MONGOTEST_TOPOLOGY", "")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-such.sock"))
	built.Lock()
	builtBefore := len(built.outs)
	built.Unlock()
	s, err := resolveShared()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.stop(); err != nil {
		t.Error(err)
	}
	if s.Kind() != KindFerretDB {
		t.Fatalf("kind %q, want %q", s.Kind(), KindFerretDB)
	}
	built.Lock()
	for _, out := range built.outs[builtBefore:] {
		if strings.TrimSuffix(filepath.Base(out), ".exe") == dockerModule.cmd {
			t.Errorf("built %s without a Docker engine", out)
		}
	}
	built.Unlock()

	t.Setenv("DSYNC_MONGOTEST_TOPOLOGY", "sharded")
	s, err = resolveShared()
	if err == nil {
		_ = s.stop()
		t.Fatalf("DSYNC_MONGOTEST_TOPOLOGY=sharded without Docker: got a %s server", s.Kind())
	}
	if !strings.Contains(err.Error(), "DSYNC_MONGOTEST_TOPOLOGY=sharded") {
		t.Fatalf("error does not name the variable: %v", err)
	}
}

// MONGODB_URI wins over everything and is reported as kind "uri".
func TestResolveMongoDBURI(t *testing.T) {
	t.Setenv("MONGODB_URI", Shared(t).URI())
	s, err := resolveShared()
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind() != KindURI || s.URI() != Shared(t).URI() {
		t.Fatalf("got kind %q uri %q", s.Kind(), s.URI())
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"mongodb://h:1/":                     "mongodb://h:1/",
		"mongodb://u:secret@h:1/db?x=a@b":    "mongodb://u:***@h:1/db?x=a@b",
		"mongodb+srv://u@cluster.example/db": "mongodb+srv://u@cluster.example/db",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// A child that cannot listen is reported at once, with its stderr.
func TestChildStartFailureReportsStderr(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	base := t.TempDir()
	start := time.Now()
	c, err := startChild(filepath.Join(base, "data"), l.Addr().String(), "", filepath.Join(base, "stderr.log"))
	if err == nil {
		c.kill()
		t.Fatal("child started on a busy port")
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error does not carry the child's stderr: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	t.Logf("error as reported: %v", err)
}

// With an engine that answers, the harness runs the dockerserver child
// with the topology and version asked for, hands the tests the URI the
// child prints, and stops the child (stdin closed, SIGTERM) so that it
// removes its containers. The child here is a script standing in for
// dockerserver (DSYNC_MONGOTEST_DOCKERSERVER), since no engine runs here.
func TestDockerChildProtocol(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("OK")) // a ping is all the harness asks
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	dir := t.TempDir()
	script := filepath.Join(dir, "dockerserver")
	const uri = "mongodb://127.0.0.1:1/?directConnection=true"
	if err := os.WriteFile(script, []byte(`#!/bin/sh
echo "$@" >"$0.args"
trap 'echo stopped >"$0.stopped"; exit 0' TERM
echo '`+uri+`'
cat >/dev/null
echo stopped >"$0.stopped"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MONGODB_URI", "")
	t.Setenv("DSYNC_MONGOTEST_DOCKER", "")
	t.Setenv("DSYNC_MONGOTEST_DOCKERSERVER", script)
	t.Setenv("DSYNC_MONGOTEST_TOPOLOGY", "replset")
	t.Setenv("DSYNC_MONGOTEST_MONGO_VERSION", "6.0")
	t.Setenv("DSYNC_MONGOTEST_MONGO_IMAGE", "")
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	s, err := resolveShared()
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind() != KindDocker || s.URI() != uri {
		_ = s.stop()
		t.Fatalf("kind %q URI %q, want %q %q", s.Kind(), s.URI(), KindDocker, uri)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(script + ".args")
	if got := strings.TrimSpace(string(args)); got != "-topology replset -version 6.0" {
		t.Errorf("dockerserver ran with %q", got)
	}
	if _, err := os.Stat(script + ".stopped"); err != nil {
		t.Errorf("the child was not stopped: %v", err)
	}
}

// The test binaries of a checkout share one server binary, which go build
// links only when it is out of date: a second build leaves the first's
// output in place (the same file: a link renames a new one there; go
// build only touches its time), and another checkout's sources get a
// directory of their own.
func TestServerBinaryIsShared(t *testing.T) {
	if os.Getenv(envServerBin) != "" {
		t.Skipf("%s names a ready-built server", envServerBin)
	}
	first, err := ferretServer.build()
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := ferretServer.build()
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if second != first || !os.SameFile(before, after) {
		t.Errorf("second build made a new %s, want %s left in place", second, first)
	}

	src, err := ferretServer.sourceDir()
	if err != nil {
		t.Fatal(err)
	}
	mine, err := binDir(src)
	if err != nil {
		t.Fatal(err)
	}
	other, err := binDir(filepath.Join(t.TempDir(), "another-checkout"))
	if err != nil {
		t.Fatal(err)
	}
	if mine != filepath.Dir(first) || other == mine {
		t.Errorf("binDir: this checkout %s (binary in %s), another %s: want the binary's directory, and another for another checkout", mine, filepath.Dir(first), other)
	}
}
