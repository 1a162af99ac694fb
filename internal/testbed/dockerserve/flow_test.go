package dockerserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEngine answers the Engine API calls Start makes, for a deployment
// whose members never answer (their published port is closed): it
// records the calls and the container it was asked to create.
type fakeEngine struct {
	t        *testing.T
	deadPort int

	mu      sync.Mutex
	calls   []string
	created map[string]any
	network map[string]any
}

var apiVersion = regexp.MustCompile(`^/v[0-9.]+/`)

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := apiVersion.ReplaceAllString(r.URL.Path, "/")
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+path)
	f.mu.Unlock()
	decode := func(into *map[string]any) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if err := json.Unmarshal(b, into); err != nil {
			f.t.Errorf("%s %s: body %q: %v", r.Method, path, b, err)
		}
	}
	switch {
	case path == "/_ping":
		_, _ = w.Write([]byte("OK"))
	case path == "/version": // asked when the client checks the API version
		_, _ = w.Write([]byte(`{"ApiVersion":"1.41","Version":"27.0.0"}`))
	case path == "/networks/create":
		decode(&f.network)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"Id":"net1"}`))
	case path == "/networks/net1" && r.Method == "GET":
		_, _ = w.Write([]byte(`{"Id":"net1","Name":"p","Containers":{}}`))
	case path == "/networks/net1" && r.Method == "DELETE":
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(path, "/images/") && strings.HasSuffix(path, "/json"):
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"No such image"}`))
	case path == "/images/create":
		if q := r.URL.Query(); q.Get("fromImage") != "mongo" || q.Get("tag") != "7.0" {
			f.t.Errorf("pull %v", q)
		}
		_, _ = w.Write([]byte(`{"status":"Pulling"}` + "\n" + `{"status":"Done"}` + "\n"))
	case path == "/containers/create":
		if name := r.URL.Query().Get("name"); name != "p-rs0-0" {
			f.t.Errorf("container name %q", name)
		}
		decode(&f.created)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"Id":"c0"}`))
	case path == "/containers/c0/start":
		w.WriteHeader(http.StatusNoContent)
	case path == "/containers/c0/json":
		fmt.Fprintf(w, `{"Id":"c0","Name":"/p-rs0-0","NetworkSettings":{"Ports":{"27017/tcp":[{"HostIp":"0.0.0.0","HostPort":"%d"}]}}}`, f.deadPort)
	case path == "/containers/c0" && r.Method == "DELETE":
		if q := r.URL.Query(); q.Get("force") != "1" || q.Get("v") != "1" {
			f.t.Errorf("remove without force and volumes: %v", r.URL)
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		f.t.Errorf("unexpected call %s %s", r.Method, r.URL)
		http.Error(w, `{"message":"unexpected"}`, http.StatusInternalServerError)
	}
}

// Start's calls in order, against an engine that lacks the image: the
// network, the pull, the container with the plan's command, labels and
// auto-removal, and, when the member never becomes primary, the
// container and the network removed.
func TestStartFlow(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0") // the "published" port: closed, nothing answers
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{t: t, deadPort: dead.Addr().(*net.TCPAddr).Port}
	dead.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_HOST", "tcp://"+l.Addr().String())

	p, _ := NewPlan(Single, "p")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var log strings.Builder
	c, err := Start(ctx, p, "mongo", "7.0", &log)
	if err == nil || c != nil || !strings.Contains(err.Error(), "replSetInitiate rs0") {
		t.Fatalf("Start: %v, %v; want a replSetInitiate error", c, err)
	}
	t.Logf("error as reported: %v\nlog:\n%s", err, log.String())

	f.mu.Lock()
	defer f.mu.Unlock()
	want := []string{
		"GET /_ping",
		"POST /networks/create",
		"GET /images/mongo:7.0/json",
		"POST /images/create",
		"POST /containers/create",
		"POST /containers/c0/start",
		"GET /containers/c0/json",
		"GET /networks/net1",
		"DELETE /containers/c0",
		"DELETE /networks/net1",
	}
	calls := slices.DeleteFunc(slices.Clone(f.calls), func(c string) bool { return c == "GET /version" })
	if !slices.Equal(calls, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	if f.network["Name"] != "p" || fmt.Sprint(f.network["Labels"]) != "map[dsync.mongotest:1]" {
		t.Errorf("network: %v", f.network)
	}
	got := fmt.Sprint(f.created["Image"], " ", f.created["Entrypoint"], " ", f.created["Cmd"], " ", f.created["Labels"])
	if wantC := "mongo:7.0 [timeout 3600 docker-entrypoint.sh] [mongod --replSet rs0 --bind_ip_all --port 27017 --wiredTigerCacheSizeGB 0.25] map[dsync.mongotest:1]"; got != wantC {
		t.Errorf("container:\n got %s\nwant %s", got, wantC)
	}
	hc, _ := f.created["HostConfig"].(map[string]any)
	if hc["AutoRemove"] != true || hc["PublishAllPorts"] != true {
		t.Errorf("HostConfig: %v", hc)
	}
	nc, _ := f.created["NetworkingConfig"].(map[string]any)
	if eps, _ := nc["EndpointsConfig"].(map[string]any); eps["net1"] == nil {
		t.Errorf("NetworkingConfig: %v", nc)
	}
}
