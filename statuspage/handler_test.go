package statuspage_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
	"github.com/go-dsync/dsync/statuspage"
)

// fixture is a store with a holder and a waiter of "jobs", a semaphore
// with two units held, and an election with a leader; a reader Client
// of its own serves the page.
type fixture struct {
	store   *memory.Store
	reader  *memory.Process
	client  *dsync.Client
	members leader.MemberStore
	holder  *dsync.Mutex
	srv     *httptest.Server
}

func newClient(t *testing.T, p *memory.Process) *dsync.Client {
	t.Helper()
	c, err := dsync.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{store: memory.New(), members: leadertest.NewMemoryMembers()}
	f.reader = f.store.Process()
	f.client = newClient(t, f.reader)

	var err error
	holderClient := newClient(t, f.store.Process())
	if f.holder, err = dsync.NewMutex(holderClient, "jobs"); err != nil {
		t.Fatal(err)
	}
	if err := f.holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	waiter, err := dsync.NewMutex(newClient(t, f.store.Process()), "jobs")
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, stopWaiting := context.WithCancel(ctx)
	t.Cleanup(stopWaiting)
	go waiter.LockContext(waitCtx)

	sem, err := dsync.NewSemaphore(newClient(t, f.store.Process()), "encode", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := sem.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	e, err := leader.NewElection(newClient(t, f.store.Process()), "billing", leader.WithMembers(f.members), leader.WithVersion("v1.2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(statuspage.New(statuspage.Config{Client: f.client, Members: f.members}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) get(t *testing.T, path string) (int, statuspage.Snapshot) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s statuspage.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, s
}

// until reads status.json until ok accepts it: the waiter's claim and
// the store's key directory are written in the background.
func (f *fixture) until(t *testing.T, path string, ok func(statuspage.Snapshot) bool) statuspage.Snapshot {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, s := f.get(t, path)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: never as expected; last: %+v", path, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lockNamed(s statuspage.Snapshot, name string) *statuspage.Lock {
	for i := range s.Locks {
		if s.Locks[i].Name == name {
			return &s.Locks[i]
		}
	}
	return nil
}

func TestJSONShowsHoldersQueueSemaphoreAndElection(t *testing.T) {
	f := setup(t)
	s := f.until(t, "/status.json", func(s statuspage.Snapshot) bool {
		j := lockNamed(s, "jobs")
		return j != nil && len(j.Waiting) == 1 && lockNamed(s, "encode") != nil && len(s.Elections) == 1 &&
			s.Elections[0].Leader != nil && len(s.Elections[0].Members) == 1
	})
	j := lockNamed(s, "jobs")
	if j.Kind != "mutex" || j.State != "held" || len(j.Holders) != 1 || j.Holders[0].Token != f.holder.Token() {
		t.Errorf("jobs = %+v, want held by token %d", j, f.holder.Token())
	}
	if h := j.Holders[0]; h.Host == "" || h.PID == 0 || h.ExpiresInMS <= 0 || h.ExpiresAt.Before(s.Now) {
		t.Errorf("holder %+v: want host, pid and a lease ending after %v", h, s.Now)
	}
	if w := j.Waiting[0]; w.Token <= j.Holders[0].Token {
		t.Errorf("waiter token %d, want after the holder's %d", w.Token, j.Holders[0].Token)
	}
	if e := lockNamed(s, "encode"); e.Kind != "semaphore" || e.State != "2/3" || e.Key != "dsync:sem/encode" {
		t.Errorf("encode = %+v, want a semaphore 2/3", e)
	}
	el := s.Elections[0]
	if el.Name != "billing" || el.Key != "dsync:election/billing" || el.Leader.Version != "v1.2" || el.Leader.Term == 0 ||
		el.Members[0].ID != el.Leader.ID || !el.Members[0].Leader {
		t.Errorf("election = %+v, want billing led at v1.2 by its one member", el)
	}
	if s.Clock != "local" || s.Error != "" || s.Order != "bytes" || s.More || s.Next != "" {
		t.Errorf("summary %+v, want the local clock, no error, the memory store's order (bytes), no more", s.Summary)
	}

	// A release shows on a later read: the waiter holds, nobody waits.
	waiterToken := j.Waiting[0].Token
	f.holder.Unlock()
	f.until(t, "/status.json", func(s statuspage.Snapshot) bool {
		j := lockNamed(s, "jobs")
		return j != nil && len(j.Holders) == 1 && j.Holders[0].Token == waiterToken && len(j.Waiting) == 0
	})
}

func TestJSONFiltersAndPages(t *testing.T) {
	f := setup(t)
	f.until(t, "/status.json", func(s statuspage.Snapshot) bool { return len(s.Locks) == 2 && len(s.Elections) == 1 })

	_, s := f.get(t, "/status.json?namespace=sem")
	if len(s.Locks) != 1 || s.Locks[0].Name != "encode" || len(s.Elections) != 0 {
		t.Errorf("namespace=sem: %+v, want only encode", s)
	}
	_, s = f.get(t, "/status.json?prefix=jo")
	if len(s.Locks) != 1 || s.Locks[0].Name != "jobs" {
		t.Errorf("prefix=jo: %+v, want only jobs", s)
	}
	_, s = f.get(t, "/status.json?namespace=election")
	if len(s.Locks) != 0 || len(s.Elections) != 1 {
		t.Errorf("namespace=election: %+v, want the election", s)
	}
	// Pages of one key: three keys, three pages, the last with no Next.
	seen, after := 0, ""
	for range 4 {
		_, s = f.get(t, "/status.json?limit=1&after="+after)
		seen += len(s.Locks) + len(s.Elections)
		if after = s.Next; after == "" {
			break
		}
	}
	if seen != 3 || after != "" || s.More {
		t.Errorf("paged %d keys (next %q), want 3 and no next", seen, after)
	}
	resp, err := http.Get(f.srv.URL + "/status.json?limit=0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("limit=0: status %d, want 400", resp.StatusCode)
	}
}

func TestUnreachableStoreSaysSo(t *testing.T) {
	f := setup(t)
	f.reader.SetReachable(false)
	code, s := f.get(t, "/status.json")
	if code != http.StatusServiceUnavailable || !strings.Contains(s.Error, "unreachable") || len(s.Locks) != 0 {
		t.Errorf("unreachable: %d %+v, want 503 naming the cause", code, s)
	}
	f.reader.SetReachable(true)
	code, s = f.get(t, "/status.json")
	if code != http.StatusOK || s.Error != "" {
		t.Errorf("reachable again: %d %q, want 200", code, s.Error)
	}
	// The page tells the person, in words, from the JSON's error.
	js := body(t, f.srv.URL+"/app.js")
	if !strings.Contains(js, "Cannot reach the store") {
		t.Error("app.js does not say when the store cannot be reached")
	}
}

func TestStoreClockIsUsed(t *testing.T) {
	store := memory.New()
	c := newClient(t, store.Process())
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := httptest.NewServer(statuspage.New(statuspage.Config{Client: c,
		Now: func(context.Context) (time.Time, error) { return at, nil }}))
	defer srv.Close()
	var s statuspage.Snapshot
	if err := json.Unmarshal([]byte(body(t, srv.URL+"/status.json")), &s); err != nil {
		t.Fatal(err)
	}
	if !s.Now.Equal(at) || s.Clock != "store" {
		t.Errorf("now %v clock %q, want %v from the store", s.Now, s.Clock, at)
	}
}

func TestPageIsSelfContainedAndReadOnly(t *testing.T) {
	srv := httptest.NewServer(statuspage.New(statuspage.Config{Client: newClient(t, memory.New().Process())}))
	defer srv.Close()
	page := body(t, srv.URL+"/")
	for _, want := range []string{`src="app.js"`, `href="style.css"`, "Locks", "Elections"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, path := range []string{"/", "/app.js", "/style.css"} {
		if b := body(t, srv.URL+path); strings.Contains(b, "http://") || strings.Contains(b, "https://") {
			t.Errorf("%s refers to the network", path)
		}
	}
	resp, err := http.Post(srv.URL+"/status.json", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

func body(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// TestJSONShowsRevocations: a revoked session's record (who, when, why)
// is in status.json, and its holder's claim is marked revoked until it
// leaves the queue; the page has the section that draws them.
func TestJSONShowsRevocations(t *testing.T) {
	f := setup(t)
	ctx := t.Context()
	s := f.until(t, "/status.json", func(s statuspage.Snapshot) bool {
		j := lockNamed(s, "jobs")
		return j != nil && len(j.Holders) == 1 && j.Holders[0].Session != ""
	})
	if len(s.Revocations) != 0 || lockNamed(s, "jobs").Holders[0].Revoked {
		t.Fatalf("before any revoke: revocations %+v, holder %+v", s.Revocations, lockNamed(s, "jobs").Holders[0])
	}
	session := lockNamed(s, "jobs").Holders[0].Session
	at := f.store.ServerTime().Latest
	if err := f.store.Roles().Revocations.Revoke(ctx, driver.Revocation{Session: session, By: "ops@host", Reason: "stuck since Monday", At: at}); err != nil {
		t.Fatal(err)
	}
	_, s = f.get(t, "/status.json")
	if len(s.Revocations) != 1 {
		t.Fatalf("revocations = %+v; want the one revoke", s.Revocations)
	}
	if r := s.Revocations[0]; r.Session != session || r.By != "ops@host" || r.Reason != "stuck since Monday" || !r.At.Equal(at) {
		t.Errorf("revocation = %+v; want %s by ops@host at %v, stuck since Monday", r, session, at)
	}
	if j := lockNamed(s, "jobs"); len(j.Holders) == 1 && j.Holders[0].Session == session && !j.Holders[0].Revoked {
		t.Errorf("the revoked holder's claim %+v is not marked revoked", j.Holders[0])
	}
	for path, want := range map[string]string{"/": `id="revocations"`, "/app.js": "s.revocations"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("GET %s has no %q", path, want)
		}
	}
}

// TestJSONShowsStalls: the stall records are in status.json, newest
// first, each with its key's kind and name, whatever the filter, and
// with no time the holder did not give; the page has the section that
// draws them.
func TestJSONShowsStalls(t *testing.T) {
	f := setup(t)
	ctx := t.Context()
	_, s := f.get(t, "/status.json")
	if s.Stalls == nil || len(s.Stalls) != 0 {
		t.Fatalf("before any stall: stalls %#v; want an empty list", s.Stalls)
	}
	at := f.store.ServerTime().Latest
	older := driver.Stall{Key: "jobs", Token: 4, Owner: "o1", Session: "s1", Nonce: "n1", Host: "h1", PID: 11, At: at.Add(-2 * time.Hour)}
	newer := driver.Stall{Key: "dsync:sem/encode", Token: 9, Owner: "o2", Session: "s2", Nonce: "n2", Host: "h2", PID: 22,
		Since: at.Add(-time.Minute), LastProgress: at.Add(-20 * time.Second), At: at}
	for _, st := range []driver.Stall{older, newer} {
		if err := f.store.Roles().Stalls.RecordStall(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	_, s = f.get(t, "/status.json?prefix=nothing-here")
	want := []statuspage.Stall{
		{Key: "dsync:sem/encode", Kind: "semaphore", Name: "encode", Token: 9, Owner: "o2", Host: "h2", PID: 22, Session: "s2", Nonce: "n2",
			Since: newer.Since, LastProgress: newer.LastProgress, At: newer.At},
		{Key: "jobs", Kind: "mutex", Name: "jobs", Token: 4, Owner: "o1", Host: "h1", PID: 11, Session: "s1", Nonce: "n1", At: older.At},
	}
	if len(s.Stalls) != len(want) {
		t.Fatalf("stalls = %+v; want %+v", s.Stalls, want)
	}
	for i, w := range want {
		g := s.Stalls[i]
		if g.Key != w.Key || g.Kind != w.Kind || g.Name != w.Name || g.Token != w.Token || g.Owner != w.Owner || g.Host != w.Host ||
			g.PID != w.PID || g.Session != w.Session || g.Nonce != w.Nonce ||
			!g.Since.Equal(w.Since) || !g.LastProgress.Equal(w.LastProgress) || !g.At.Equal(w.At) {
			t.Errorf("stalls[%d] = %+v; want %+v", i, g, w)
		}
	}
	resp, err := http.Get(f.srv.URL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct{ Stalls []map[string]any }
	err = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if err != nil || len(raw.Stalls) != 2 {
		t.Fatalf("status.json's stalls = %v, %v; want two", raw.Stalls, err)
	}
	for i, has := range []bool{true, false} {
		for _, name := range []string{"since", "lastProgress"} {
			if _, ok := raw.Stalls[i][name]; ok != has {
				t.Errorf("status.json's stalls[%d] has %q: %v; want %v", i, name, ok, has)
			}
		}
	}
	for path, want := range map[string]string{"/": `id="stalls"`, "/app.js": "s.stalls"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("GET %s has no %q", path, want)
		}
	}
}
