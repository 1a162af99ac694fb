package mongotest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// An engine that answers ping but cannot run the container yields a real
// error (Shared then logs it and falls back to FerretDB).
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
	if err == nil || err == errNoDocker {
		t.Fatalf("startDocker() error = %v, want a container error", err)
	}
	t.Logf("error as reported: %v", err)

	t.Setenv("DSYNC_MONGOTEST_DOCKER", "0")
	if _, err := startDocker(); err != errNoDocker {
		t.Fatalf("DSYNC_MONGOTEST_DOCKER=0: error = %v, want errNoDocker", err)
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

// The Engine API calls in order, against a fake engine that lacks the
// image: create (404), pull, create, start, inspect, and the container is
// removed when its mongod never answers.
func TestDockerAPIFlow(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0") // the "published" port: closed, nothing answers
	if err != nil {
		t.Fatal(err)
	}
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var calls []string
	var created map[string]any
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, dockerAPI)
		mu.Lock()
		calls = append(calls, r.Method+" "+path)
		n := len(calls)
		mu.Unlock()
		switch {
		case path == "/_ping":
			_, _ = w.Write([]byte("OK"))
		case path == "/containers/create" && n == 2:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"No such image: mongo:7"}`))
		case path == "/images/create":
			if q := r.URL.Query(); q.Get("fromImage") != "mongo" || q.Get("tag") != "7" {
				t.Errorf("pull %v", q)
			}
			_, _ = w.Write([]byte(`{"status":"Pulling"}` + "\n" + `{"status":"Done"}` + "\n"))
		case path == "/containers/create":
			mu.Lock()
			err := json.NewDecoder(r.Body).Decode(&created)
			mu.Unlock()
			if err != nil {
				t.Error(err)
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"Id":"0123456789abcdef0123"}`))
		case path == "/containers/0123456789abcdef0123/start":
			w.WriteHeader(http.StatusNoContent)
		case path == "/containers/0123456789abcdef0123/json":
			fmt.Fprintf(w, `{"NetworkSettings":{"Ports":{"27017/tcp":[{"HostIp":"0.0.0.0","HostPort":"%d"}]}}}`, deadPort)
		case r.Method == "DELETE" && path == "/containers/0123456789abcdef0123":
			if r.URL.Query().Get("force") != "1" {
				t.Errorf("remove without force: %v", r.URL)
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, `{"message":"unexpected"}`, http.StatusInternalServerError)
		}
	})}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	defer func(d time.Duration) { replSetTimeout = d }(replSetTimeout)
	replSetTimeout = time.Second
	t.Setenv("DSYNC_MONGOTEST_DOCKER", "")
	t.Setenv("DSYNC_MONGOTEST_MONGO_IMAGE", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())
	_, err = startDocker()
	if err == nil || !strings.Contains(err.Error(), "replica set in mongo:7") {
		t.Fatalf("startDocker() error = %v, want a replica set error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"GET /_ping",
		"POST /containers/create",
		"POST /images/create",
		"POST /containers/create",
		"POST /containers/0123456789abcdef0123/start",
		"GET /containers/0123456789abcdef0123/json",
		"DELETE /containers/0123456789abcdef0123",
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	if created["Image"] != "mongo:7" || fmt.Sprint(created["Entrypoint"]) != "[timeout 3600 docker-entrypoint.sh]" ||
		fmt.Sprint(created["Cmd"]) != "[mongod --replSet rs0 --bind_ip_all]" {
		t.Errorf("create body: %v", created)
	}
	hc, _ := created["HostConfig"].(map[string]any)
	if hc["AutoRemove"] != true || hc["PublishAllPorts"] != true {
		t.Errorf("HostConfig: %v", hc)
	}
}
