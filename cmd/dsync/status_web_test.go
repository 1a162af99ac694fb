//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/statuspage"
)

// TestStatusWeb: dsync status --web serves the page and its JSON, with a
// lock held through the library, in the store's time, on loopback.
func TestStatusWeb(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()
	c := libraryClient(t, uri, db)
	m, err := dsync.NewMutex(c, "webjob")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock()

	url, stop := serveWeb(t, ctx, uri, db)
	defer stop()

	if page := get(t, url); !strings.Contains(page, "<title>dsync status</title>") {
		t.Errorf("GET /: %q, want the page", page)
	}
	for {
		var s statuspage.Snapshot
		if err := json.Unmarshal([]byte(get(t, url+"status.json")), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Locks) == 1 && len(s.Locks[0].Holders) == 1 {
			if s.Locks[0].Name != "webjob" || s.Locks[0].Holders[0].Token != m.Token() || s.Clock != "store" {
				t.Errorf("status.json: %+v, want webjob held with token %d in the store's time", s, m.Token())
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("webjob never listed: last %+v", s)
		}
		time.Sleep(50 * time.Millisecond) // the key directory is written in the background
	}
}

// TestStatusWebEmptyDatabase: a database with no lock collection is
// not created by the page, which says why it shows nothing.
func TestStatusWebEmptyDatabase(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	db := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(time.Minute))
	defer cancel()
	url, stop := serveWeb(t, ctx, uri, db)
	defer stop()
	resp, err := http.Get(url + "status.json")
	if err != nil {
		t.Fatal(err)
	}
	var s statuspage.Snapshot
	err = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(s.Error, "has no collection dsync_locks") {
		t.Errorf("status.json of an empty database: %d %+v %v, want 503 saying it has no collection", resp.StatusCode, s, err)
	}
	names, err := mongotest.NewClient(t, uri).Database(db).ListCollectionNames(ctx, bson.D{})
	if err != nil || len(names) != 0 {
		t.Errorf("after the page read an empty database, its collections are %q (%v); want none", names, err)
	}
}

// serveWeb starts dsync status --web on db, on a loopback port, and
// returns its URL; stop ends it.
func serveWeb(t *testing.T, ctx context.Context, uri, db string) (url string, stop func()) {
	t.Helper()
	cmd := dsyncCmd(ctx, env(uri), "--db", db, "status", "--web", "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("dsync status --web after SIGTERM: %v", err)
		}
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		stop()
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stderr)
	url = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	if url == "" {
		stop()
		t.Fatalf("dsync status --web said %q, want the loopback URL it serves", line)
	}
	return url, stop
}

func TestStatusWebUsageErrors(t *testing.T) {
	t.Parallel()
	e := env(mongotest.Shared(t).URI())
	for _, args := range [][]string{{"status", "--web", "--json"}, {"status", "--web", "x"}, {"status", "--addr", "127.0.0.1:1"}} {
		if r := runDsync(t, e, "", slow(30*time.Second), args...); r.code != exitUsage {
			t.Errorf("dsync %s: exit %d (%s), want %d", strings.Join(args, " "), r.code, r.stderr, exitUsage)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

// TestStatusWebSaysAtOnceTheServerIsGone: once the server has stopped,
// status.json says so as dsync status does ("connection refused ... (is
// the server running?)") as soon as the driver's heartbeats have failed,
// rather than wait out --timeout and say "context deadline exceeded".
func TestStatusWebSaysAtOnceTheServerIsGone(t *testing.T) {
	t.Parallel()
	srv := startServer(t, env(""), "--temp")
	ctx, cancel := context.WithTimeout(context.Background(), slow(2*time.Minute))
	defer cancel()
	url, stop := serveWeb(t, ctx, srv.uri, defaultDB)
	defer stop()
	get503 := func() statuspage.Snapshot {
		t.Helper()
		resp, err := http.Get(url + "status.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s statuspage.Snapshot
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := get503(); strings.Contains(s.Error, "cannot reach") {
		t.Fatalf("status.json before the server stopped: %+v", s)
	}
	if r := srv.stop(); r.code != 0 {
		t.Fatalf("dsync server: exit %d\n%s", r.code, r.stderr)
	}
	// The first read after the stop may meet the connection the server
	// closed; the next ones meet a refusal, each within a heartbeat.
	const tries = 5
	for i := 0; ; i++ {
		s := get503()
		if strings.Contains(s.Error, "connection refused") && strings.Contains(s.Error, "(is the server running?)") {
			break
		}
		if strings.Contains(s.Error, "deadline exceeded") || i == tries-1 {
			t.Fatalf("status.json, read %d after the server stopped: %q; want it to say the connection was refused", i+1, s.Error)
		}
	}
}

// With its address taken (the default one, by another dsync status
// --web), --web says so in one line and how to pick another: --addr.
func TestStatusWebAddressTakenSuggestsAddr(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	r := runDsync(t, env(mongotest.Shared(t).URI()), "", slow(30*time.Second), "--db", mongotest.DatabaseName(t), "status", "--web", "--addr", addr)
	if lines := readLines(r.stderr); r.code != exitFailure || len(lines) != 1 || !strings.Contains(r.stderr, addr+": address already in use") || !strings.Contains(r.stderr, "--addr 127.0.0.1:0") {
		t.Errorf("dsync status --web on a taken address: exit %d, stderr %q; want %d and one line saying %s is in use and to pick another with --addr", r.code, r.stderr, exitFailure, addr)
	}
}
