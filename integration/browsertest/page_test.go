package browsertest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
	"github.com/go-dsync/dsync/statuspage"
)

// TestMain runs no test when there is no chromium to drive, unless
// DSYNC_BROWSERTEST_REQUIRED=1: every test here drives one, and go test
// shows a package whose tests all skipped as a plain "ok", the same as
// one whose tests passed. With none run, it shows "ok ... [no tests to
// run]", and the reason goes to stderr (shown with -v).
func TestMain(m *testing.M) {
	if _, ok := findChromium(); !ok && os.Getenv("DSYNC_BROWSERTEST_REQUIRED") != "1" {
		flag.Parse()
		if err := flag.Set("test.run", "^$"); err != nil {
			panic(err)
		}
		fmt.Fprintln(os.Stderr, "browsertest: "+noChromium+": no test runs")
	}
	mongotest.Main(m)
}

const noChromium = "no chromium on PATH: install Debian's chromium (apt-get install -y chromium) to run the browser tests"

// findChromium returns the browser to drive, if one is on PATH.
func findChromium() (string, bool) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// chromium returns the browser to drive, or fails (without one, TestMain
// runs no test unless DSYNC_BROWSERTEST_REQUIRED=1, as in CI).
func chromium(t *testing.T) string {
	p, ok := findChromium()
	if !ok {
		t.Fatal(noChromium + ", and DSYNC_BROWSERTEST_REQUIRED=1")
	}
	return p
}

// browser starts headless Chromium on a fresh profile, with everything
// that would reach the internet turned off.
func browser(t *testing.T, ctx context.Context) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1366, 768),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	return bctx
}

// TestPageInBrowser: holders, waiters, an election and a semaphore on
// the embedded server, as a person sees them on the page; a release
// shows without reloading.
func TestPageInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bctx := browser(t, ctx)

	db := mongotest.NewDatabase(t)
	store, err := dsyncmongo.NewStore(db)
	if err != nil {
		t.Fatal(err)
	}
	newClient := func() *dsync.Client {
		c, err := dsync.NewClient(store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	members, err := leadermongo.NewStore(store)
	if err != nil {
		t.Fatal(err)
	}

	holder, err := dsync.NewMutex(newClient(), "nightly")
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	// Two waiters, queued one after the other: the page lists them in
	// that order.
	page := newClient()
	var waiters []*dsync.Mutex
	for range 2 {
		w, err := dsync.NewMutex(newClient(), "nightly")
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		go func() {
			// A waiter stops only when the test ends; say why if sooner.
			if err := w.LockContext(wctx); err != nil && wctx.Err() == nil {
				t.Logf("a waiter of nightly stopped waiting: %v", err)
			}
		}()
		waitFor(t, ctx, func() bool {
			q, err := statuspage.NewReader(page).Queue(ctx, "nightly")
			return err == nil && len(q) == len(waiters)+2
		})
		waiters = append(waiters, w)
	}
	sem, err := dsync.NewSemaphore(newClient(), "encode", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := sem.Acquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	e, err := leader.NewElection(newClient(), "billing", leader.WithMembers(members), leader.WithVersion("v7"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := statuspage.NewReader(page).Queue(ctx, "nightly")
	if err != nil || len(q) != 3 {
		t.Fatalf("queue of nightly: %v %v, want the holder and two waiters", q, err)
	}

	shardTokens := runPartition(t, ctx, newClient(), members, "jobs", 2)

	srv := httptest.NewServer(statuspage.New(statuspage.Config{Client: page, Members: members}))
	defer srv.Close()
	defer keepScreenshot(t, bctx)

	nightly := `.card.lock[data-key="nightly"]`
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	// The holder's row with its token, then the waiters in queue order,
	// as the store has them when the page shows them: on a busy machine a
	// waiter's session may be retired and its claim queued again, under
	// a new token, after q was read.
	waitText(t, bctx, nightly+` tbody`, func(rows string) bool {
		now, err := statuspage.NewReader(page).Queue(ctx, "nightly")
		if err != nil || len(now) != 3 {
			return false
		}
		q = now // the steps below follow the queue the page showed
		want := []string{"holds\t" + tok(holder.Token()), "waits #1\t" + tok(now[1].Token), "waits #2\t" + tok(now[2].Token)}
		lines := strings.Split(strings.TrimSpace(rows), "\n")
		for i, w := range want {
			if !strings.HasPrefix(at(lines, i), w) {
				return false
			}
		}
		return len(lines) == len(want)
	})
	// The semaphore's units and the leader.
	waitText(t, bctx, `.card.lock[data-key="dsync:sem/encode"] .badge`, func(s string) bool { return s == "2/3" })
	waitText(t, bctx, `.card.election[data-name="billing"]`, func(s string) bool {
		return strings.Contains(s, "led by "+info.Host+" pid "+strconv.Itoa(info.PID)) && strings.Contains(s, tok(info.Token)) && strings.Contains(s, "v7")
	})

	// The partition's shards, each with its owner and the token its
	// function runs under.
	host, _ := os.Hostname()
	waitText(t, bctx, `.card.partition[data-name="jobs"] tbody`, func(s string) bool {
		tokens := shardTokens()
		return len(tokens) == 2 &&
			strings.Contains(s, "0\t"+host+" pid "+strconv.Itoa(os.Getpid())+"\t"+tok(tokens[0])) &&
			strings.Contains(s, "1\t"+host+" pid "+strconv.Itoa(os.Getpid())+"\t"+tok(tokens[1]))
	})

	// A release shows without reloading: the first waiter holds, one waits.
	holder.Unlock()
	waitText(t, bctx, nightly+` tbody`, func(s string) bool {
		return strings.HasPrefix(s, "holds\t"+tok(q[1].Token)) && strings.Count(s, "waits #") == 1
	})

	// A revoke shows without reloading: the record (who, why) and the
	// revoked holder's row marked.
	if err := store.Roles().Revocations.Revoke(ctx, driver.Revocation{Session: q[1].Session, By: "ops@bastion", Reason: "stuck since Monday", At: store.ServerTime().Latest}); err != nil {
		t.Fatal(err)
	}
	waitText(t, bctx, `#revocations`, func(s string) bool {
		return strings.Contains(s, q[1].Session) && strings.Contains(s, "ops@bastion") && strings.Contains(s, "stuck since Monday")
	})
	waitText(t, bctx, nightly+` tbody`, func(s string) bool {
		return strings.HasPrefix(s, "holds (revoked)\t"+tok(q[1].Token))
	})

	// Stall records show without reloading, newest first, the one of the
	// last hour marked.
	now := store.ServerTime().Latest
	for _, st := range []driver.Stall{
		{Key: "dsync:sem/encode", Token: 77, Owner: "o", Session: "s1", Nonce: "n1", Host: "stuck-1", PID: 71,
			Since: now.Add(-time.Minute), LastProgress: now.Add(-30 * time.Second), At: now},
		{Key: "nightly", Token: 66, Owner: "o", Session: "s2", Nonce: "n2", Host: "stuck-2", PID: 62, At: now.Add(-2 * time.Hour)},
	} {
		if err := store.Roles().Stalls.RecordStall(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	waitText(t, bctx, `#stalls tbody`, func(s string) bool {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		return len(lines) == 2 && strings.HasPrefix(lines[0], "encode (semaphore) · last hour\t77\tstuck-1\t71") &&
			strings.HasPrefix(lines[1], "nightly (mutex)\t66\tstuck-2\t62")
	})
	waitText(t, bctx, `#stalls tr.recent`, func(s string) bool { return strings.Contains(s, "stuck-1") })

	// Outages ridden through show without reloading, newest first: when,
	// for how long, the holds kept; one older than a day does not.
	for i, ago := range []time.Duration{time.Hour, time.Minute, 25 * time.Hour} {
		o := driver.Outage{Session: "sess-" + strconv.Itoa(i), Host: "rode-" + strconv.Itoa(i), PID: 80 + i,
			Suspended: now.Add(-ago - 12*time.Second), Resumed: now.Add(-ago), Holds: 3 + i, At: now.Add(-ago)}
		if err := store.Roles().Outages.RecordOutage(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitText(t, bctx, `#outages tbody`, func(s string) bool {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		return len(lines) == 2 && strings.HasSuffix(lines[0], "\t12s\t4\trode-1\t81\tsess-1") &&
			strings.HasSuffix(lines[1], "\t12s\t3\trode-0\t80\tsess-0")
	})
	pageShowsSets(t, ctx, bctx, store, newClient)
	saveScreenshots(t, bctx)
}

// pageShowsSets: a lock set that holds "set-1" and waits at "set-2",
// which a single Mutex holds, is shown among the sets waiting, with
// whom it waits for; a deadlock record is shown among those broken.
func pageShowsSets(t *testing.T, ctx context.Context, bctx context.Context, store *dsyncmongo.Store, newClient func() *dsync.Client) {
	t.Helper()
	single, err := dsync.NewMutex(newClient(), "set-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := single.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer single.Unlock()
	c := newClient()
	var ms []lockset.Member
	for _, k := range []string{"set-1", "set-2"} {
		m, err := dsync.NewMutex(c, k)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, lockset.Mutex(m))
	}
	set, err := lockset.New(c, ms)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- set.LockContext(wctx) }()
	defer func() {
		stop()
		if err := <-done; err == nil {
			set.Unlock()
		}
	}()
	waitText(t, bctx, `#setwaits tbody`, func(s string) bool {
		return strings.Contains(s, "set-2 (mutex, token ") && strings.Contains(s, fmt.Sprintf("pid %d token %d", os.Getpid(), single.Token()))
	})
	at := store.ServerTime().Latest
	if err := store.Roles().Deadlocks.PutDeadlock(ctx, driver.Deadlock{Victim: "victim-set", N: 1, Host: "web-9", PID: 99, At: at,
		Cycle: []driver.DeadlockEdge{{Set: "victim-set", Key: "a", Epoch: 2, HeldBy: "old-set", Token: 1}, {Set: "old-set", Key: "b", Epoch: 4, HeldBy: "victim-set", Token: 3}}}); err != nil {
		t.Fatal(err)
	}
	waitText(t, bctx, `#deadlocks tbody`, func(s string) bool {
		return strings.Contains(s, "victim-set\tweb-9\t99\tvictim-set →a→ old-set →b→ victim-set")
	})
}

// saveScreenshots, when DSYNC_BROWSERTEST_SCREENSHOTS names a directory,
// saves the page as a person sees it on a laptop (1366x768) and on a
// phone (390x844, mobile emulation), as laptop.png and phone.png, for a
// person to look at.
func saveScreenshots(t *testing.T, bctx context.Context) {
	dir := os.Getenv("DSYNC_BROWSERTEST_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sizes := []struct {
		name    string
		emulate chromedp.Action[chromedp.Void]
	}{
		{"laptop.png", chromedp.EmulateViewport(1366, 768)},
		{"phone.png", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)},
	}
	for _, sz := range sizes {
		if _, err := chromedp.Run(bctx, sz.emulate); err != nil {
			t.Fatalf("viewport for %s: %v", sz.name, err)
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: a PNG
		if err != nil {
			t.Fatalf("screenshot %s: %v", sz.name, err)
		}
		path := filepath.Join(dir, sz.name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s", path)
	}
}

// TestPageSaysWhenTheStoreCannotBeRead: a failing read shows as a
// plain message on the page.
func TestPageSaysWhenTheStoreCannotBeRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bctx := browser(t, ctx)
	c, err := dsync.NewClient(memory.New())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := httptest.NewServer(statuspage.New(statuspage.Config{Client: c,
		Now: func(context.Context) (time.Time, error) { return time.Time{}, errors.New("server selection timed out") }}))
	defer srv.Close()
	defer keepScreenshot(t, bctx)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	waitText(t, bctx, "#error", func(s string) bool {
		return s == "Cannot reach the store: server selection timed out."
	})
}

func tok(n uint64) string { return strconv.FormatUint(n, 10) }

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// waitText waits until the text of sel (as the browser renders it: cells
// split by tabs, rows by newlines) satisfies ok, and returns it. The page
// fetches every second; the wait is for the condition, bounded by 30s.
func waitText(t *testing.T, bctx context.Context, sel string, ok func(string) bool) string {
	t.Helper()
	// Generous: four of the Clients' default TTL, as a busy machine
	// slows the browser, the page's reads and the waiters alike.
	deadline := time.Now().Add(4 * dsync.DefaultTTL)
	var text string
	for {
		found, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`)).map(e => e.innerText)`))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		if len(found) == 1 {
			text = found[0]
			if ok(text) {
				return text
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never as expected; it shows %q", sel, found)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitFor(t *testing.T, ctx context.Context, ok func() bool) {
	t.Helper()
	for !ok() {
		if ctx.Err() != nil {
			t.Fatal("condition never met")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keepScreenshot saves what the browser shows when the test failed, in a
// directory that outlives the test, and says where.
func keepScreenshot(t *testing.T, bctx context.Context) {
	if !t.Failed() {
		return
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: a PNG, as its name says
	if err != nil {
		t.Logf("no screenshot: %v", err)
		return
	}
	dir, err := os.MkdirTemp("", "dsync-browsertest-")
	if err == nil {
		path := filepath.Join(dir, "page.png")
		if err = os.WriteFile(path, png, 0o644); err == nil {
			t.Logf("screenshot of the page at the failure: %s", path)
			return
		}
	}
	t.Logf("no screenshot: %v", err)
}

// runPartition runs a member of partition name, of n shards, until the
// test ends, and returns a function that gives the tokens its shards'
// functions run under (by shard), once all n run.
func runPartition(t *testing.T, ctx context.Context, c *dsync.Client, ms leader.MemberStore, name string, n int) func() map[int]uint64 {
	t.Helper()
	p, err := leader.NewPartition(c, name, n, leader.WithMembers(ms))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	tokens := map[int]uint64{}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(rctx, func(ctx context.Context, shard int) error {
			info, _ := leader.TermOf(ctx)
			mu.Lock()
			tokens[shard] = info.Token
			mu.Unlock()
			<-ctx.Done()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done; p.Close() })
	return func() map[int]uint64 {
		mu.Lock()
		defer mu.Unlock()
		if len(tokens) < n {
			return nil
		}
		return maps.Clone(tokens)
	}
}
