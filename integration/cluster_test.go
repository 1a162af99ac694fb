package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/integration/faultproxy"
	"github.com/go-dsync/dsync/integration/hintrelay"
	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/register"
	"github.com/go-dsync/dsync/integration/worker"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader/operator"
)

// cluster is a set of worker processes sharing a lock key, a history
// directory and a database, and the faults a test injects into them.
type cluster struct {
	t    *testing.T
	dir  string // history files
	uri  string // the server, as the test reaches it
	db   *mongo.Database
	base worker.Config
	log  eventLog

	// viaProxy: each worker reaches the server through a proxy of its own.
	viaProxy bool
	proxies  map[string]*faultproxy.Proxy

	// hints: the workers take direct hints (hinted ones, hints_test.go),
	// each through a relay of its own, from the port in hintListen.
	hints      bool
	relays     map[string]*hintrelay.Relay
	hintListen map[string]string

	faults *history.Writer
	// prepared: when precreate's Clients were closed.
	prepared time.Time

	// delay-requests injections, and the late writes they got applied.
	delayInjected, delayLateApplied int

	mu    sync.Mutex
	procs map[string]*proc // the live process of each worker name
	all   []*proc
}

// newCluster prepares a cluster on the server at uri; db is a database
// of that server (the test's own client), where the workers' database of
// the same name lives.
func newCluster(t *testing.T, uri string, db *mongo.Database, base worker.Config) *cluster {
	t.Helper()
	dir := t.TempDir()
	if keep := os.Getenv("DSYNC_HISTORY_DIR"); keep != "" {
		// Keep the histories for inspection.
		dir = filepath.Join(keep, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-"+time.Now().Format("150405"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base.DB = db.Name()
	base.HistoryDir = dir
	if base.Key == "" {
		base.Key = "k"
	}
	f, err := history.Create(filepath.Join(dir, "faults.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, uri: uri, db: db, base: base, faults: f,
		procs: make(map[string]*proc), proxies: make(map[string]*faultproxy.Proxy),
		hints: true, relays: make(map[string]*hintrelay.Relay), hintListen: make(map[string]string)}
	c.log.changed = make(chan struct{})
	t.Cleanup(c.cleanup)
	precreate(t, db)
	c.prepared = time.Now()
	return c
}

// cleanup kills whatever is still running and closes the proxies.
func (c *cluster) cleanup() {
	c.mu.Lock()
	all := append([]*proc(nil), c.all...)
	c.mu.Unlock()
	for _, p := range all {
		p.kill()
	}
	for _, p := range all {
		<-p.readerDone
	}
	for _, px := range c.proxies {
		px.Close()
	}
	for _, r := range c.relays {
		r.Close()
	}
	c.faults.Close()
	if c.t.Failed() {
		for _, p := range all {
			if s := p.stderr.String(); s != "" {
				c.t.Logf("stderr of %s (pid %d):\n%s", p.name, p.pid, s)
			}
		}
		dir := c.dir
		if os.Getenv("DSYNC_HISTORY_DIR") == "" {
			dir = keepHistories(c.t, dir) // else kept there already
		}
		c.t.Logf("histories in %s", dir)
	}
}

// keepHistories copies a failed test's histories out of its temporary
// directory, which the testing package removes as the test ends, and
// returns where they are kept (dir itself if the copy failed).
func keepHistories(t *testing.T, dir string) string {
	keep, err := os.MkdirTemp("", "dsync-histories-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err == nil {
		err = os.CopyFS(keep, os.DirFS(dir))
	}
	if err != nil {
		t.Logf("histories not kept: %v", err)
		return dir
	}
	return keep
}

// workerURI is the URI worker name connects to: the server's, or its
// proxy's.
func (c *cluster) workerURI(name string) string {
	if !c.viaProxy {
		return c.uri
	}
	px := c.proxies[name]
	if px == nil {
		u, err := url.Parse(c.uri)
		if err != nil {
			c.t.Fatal(err)
		}
		px, err = faultproxy.New(u.Host)
		if err != nil {
			c.t.Fatal(err)
		}
		c.proxies[name] = px
	}
	u, _ := url.Parse(c.uri)
	u.Host = px.Addr()
	q := u.Query()
	q.Set("directConnection", "true")
	u.RawQuery = q.Encode()
	return u.String()
}

// start starts worker name (again), with mod applied to the base config.
func (c *cluster) start(name string, mod func(*worker.Config)) *proc {
	c.t.Helper()
	cfg := c.base
	cfg.Name = name
	cfg.URI = c.workerURI(name)
	cfg.Runs = readsRuns(name)
	if c.hints && hinted(name) {
		cfg.HintListen, cfg.HintAdvertise = c.hintAddrs(name)
	}
	if lvl := os.Getenv("DSYNC_WORKER_LOG"); lvl != "" {
		cfg.LogLevel = lvl
	}
	if mod != nil {
		mod(&cfg)
	}
	exe, err := os.Executable()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), cfg.Encode())
	// A worker must not outlive the test, even paused.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	p := &proc{name: name, cfg: cfg, cmd: cmd, stdin: stdin, stderr: &tailBuffer{max: 32 << 10},
		exited: make(chan struct{}), readerDone: make(chan struct{})}
	cmd.Stderr = p.stderr
	var logFile *os.File // the whole stderr, with DSYNC_HISTORY_DIR; closed once the process is reaped
	if os.Getenv("DSYNC_HISTORY_DIR") != "" {
		// Kept with the histories: the whole log, not only its tail.
		f, err := os.Create(filepath.Join(c.dir, fmt.Sprintf("%s-%s.stderr", name, time.Now().Format("150405.000"))))
		if err != nil {
			c.t.Fatal(err)
		}
		logFile = f
		cmd.Stderr = io.MultiWriter(p.stderr, f)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p.pid = cmd.Process.Pid
	go func() {
		defer close(p.readerDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var ev history.Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				c.log.add(ev)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.waitErr = cmd.Wait()
		if logFile != nil {
			logFile.Close()
		}
		close(p.exited)
	}()
	c.mu.Lock()
	c.procs[name] = p
	c.all = append(c.all, p)
	c.mu.Unlock()
	summary.addWorker()
	return p
}

// restart starts p's worker again with the same configuration.
func (c *cluster) restart(p *proc) *proc {
	return c.start(p.name, func(cfg *worker.Config) { *cfg = p.cfg })
}

// maxToken returns the largest token any worker has recorded so far.
func (c *cluster) maxToken() uint64 {
	var tok uint64
	c.log.each(func(ev history.Event) {
		if ev.Key == c.lockKey() && ev.Ev != history.EvPoll && ev.Ev != history.EvObserve {
			tok = max(tok, ev.Token)
		}
	})
	return tok
}

// handoffs counts the holds so far that followed a hold by another
// process.
func (c *cluster) handoffs() int {
	n, last := 0, 0
	c.log.each(func(ev history.Event) {
		if ev.Ev == history.EvAcquire && ev.Key == c.lockKey() {
			if last != 0 && ev.PID != last {
				n++
			}
			last = ev.PID
		}
	})
	return n
}

// live returns the live processes, by worker name.
func (c *cluster) live() []*proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := make([]*proc, 0, len(c.procs))
	for _, p := range c.procs {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *proc) int { return strings.Compare(a.name, b.name) })
	return ps
}

// startN starts workers w1..wn.
func (c *cluster) startN(n int, mod func(i int, cfg *worker.Config)) {
	for i := 1; i <= n; i++ {
		c.start(fmt.Sprintf("w%d", i), func(cfg *worker.Config) {
			if mod != nil {
				mod(i, cfg)
			}
		})
	}
}

// proc returns the live process of the worker that wrote ev, if it is the
// one that wrote it.
func (c *cluster) procOf(ev history.Event) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[ev.Worker]; p != nil && p.pid == ev.PID {
		return p
	}
	return nil
}

// fault records a fault in the history.
func (c *cluster) fault(kind string, p *proc, t0, t1 int64) {
	ev := history.Event{Ev: history.EvFault, Kind: kind, T: t0, End: t1}
	if p != nil {
		ev.Worker, ev.PID = p.name, p.pid
	}
	if err := c.faults.Write(ev); err != nil {
		c.t.Fatal(err)
	}
}

// kill SIGKILLs p and waits for it to be gone.
func (c *cluster) kill(p *proc) {
	t0 := history.Now()
	p.kill()
	c.fault("sigkill", p, t0, history.Now())
}

// pause SIGSTOPs p until resume is called.
func (c *cluster) pause(p *proc) (resume func()) {
	t0 := history.Now()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatalf("SIGSTOP %s: %v", p.name, err)
	}
	return func() {
		if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			c.t.Errorf("SIGCONT %s: %v", p.name, err)
		}
		c.fault("sigstop", p, t0, history.Now())
	}
}

// faultKinds are the faults inject knows.
// ("outage" too, which only TestMixedFaults draws among them: the tests
// that cycle through faultKinds would run a round more in their short
// forms).
var faultKinds = []string{"sigkill", "sigstop", "sigstop-waiter", "partition", "partition-replies", "delay-replies", "delay-requests", "clock-jump", "restart"}

// inject injects a fault of kind into holder p (or, for sigstop-waiter,
// another worker; for restart and outage, the server srv, killed and
// restarted, or stopped for every client at once; for delay-requests, a
// guest worker with a longer TTL, see delayRequestsGuest), lasting about
// a TTL or two, and returns once it is over (a killed worker restarted, a
// partition healed, held requests delivered).
func (c *cluster) inject(kind string, p *proc, srv *mongotest.Process) {
	c.t.Helper()
	ttl := c.base.TTL
	switch kind {
	case "sigkill":
		c.kill(p)
		c.restart(p)
	case "sigstop":
		resume := c.pause(p)
		time.Sleep(randDuration(ttl, 2*ttl))
		resume()
	case "sigstop-waiter":
		for _, q := range c.live() {
			if q != p {
				resume := c.pause(q)
				time.Sleep(randDuration(ttl/2, 2*ttl))
				resume()
				break
			}
		}
	case "partition", "partition-replies", "delay-replies":
		px := c.proxies[p.name]
		if px == nil {
			c.t.Fatalf("%s: %s has no proxy", kind, p.name)
		}
		t0 := history.Now()
		switch kind {
		case "partition":
			px.Partition(faultproxy.Both)
		case "partition-replies":
			px.Partition(faultproxy.Down)
		default:
			px.SetDelay(faultproxy.Down, ttl*9/10)
		}
		time.Sleep(randDuration(ttl/2, 2*ttl))
		px.Heal()
		px.SetDelay(faultproxy.Both, 0)
		c.fault(kind, p, t0, history.Now())
	case "delay-requests":
		c.delayRequestsGuest(p)
	case "clock-jump":
		now := history.Now()
		_ = p.cmd.Process.Signal(syscall.SIGUSR1)
		c.fault(kind, p, now, now)
	case "restart":
		t0 := history.Now()
		srv.Kill()
		time.Sleep(randDuration(0, 2*ttl))
		srv.Restart()
		c.fault(kind, nil, t0, history.Now())
	case "outage":
		t0 := history.Now()
		srv.Pause()
		time.Sleep(randDuration(ttl/2, 2*ttl))
		srv.Resume()
		c.fault(kind, nil, t0, history.Now())
	default:
		c.t.Fatalf("unknown fault %q", kind)
	}
}

// stopAll asks every worker to finish its hold and exit, and waits.
func (c *cluster) stopAll() {
	c.mu.Lock()
	live := make([]*proc, 0, len(c.procs))
	for _, p := range c.procs {
		live = append(live, p)
	}
	c.mu.Unlock()
	for _, p := range live {
		p.stdin.Close()
	}
	grace := 10*time.Second + 3*c.base.TTL + c.base.HoldFor
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, p := range live {
		select {
		case <-p.exited:
			if p.waitErr != nil {
				c.t.Errorf("worker %s (pid %d) exited: %v\n%s", p.name, p.pid, p.waitErr, p.stderr)
			}
		case <-timer.C:
			c.t.Errorf("worker %s (pid %d) did not stop within %v; killing it", p.name, p.pid, grace)
			p.kill()
		}
	}
}

// await waits up to timeout for an event at index from or later that
// satisfies pred, and returns it with the index after it.
func (c *cluster) await(from int, timeout time.Duration, what string, pred func(history.Event) bool) (history.Event, int) {
	c.t.Helper()
	ev, next, ok := c.log.await(from, timeout, pred)
	if !ok {
		c.t.Fatalf("no %s within %v", what, timeout)
	}
	return ev, next
}

// lockKey is the dsync key the workers lock: the key itself, or for an
// election the key of its leadership lease.
func (c *cluster) lockKey() string {
	if c.base.Mode == worker.ModeElection {
		return operator.LockKey(c.base.Key)
	}
	return worker.StoredKey(c.base.Mode, c.base.Key)
}

// deadlineOf returns the latest deadline recorded so far for a hold.
func (c *cluster) deadlineOf(pid int, token uint64) int64 {
	var dl int64
	c.log.each(func(ev history.Event) {
		if ev.PID == pid && ev.Token == token && ev.Key == c.lockKey() {
			dl = max(dl, ev.DL)
		}
	})
	return dl
}

// ended reports whether the hold has an end event so far.
func (c *cluster) ended(pid int, token uint64) bool {
	found := false
	c.log.each(func(ev history.Event) {
		if ev.PID == pid && ev.Token == token && (ev.Ev == history.EvEnd || ev.Ev == history.EvLost) {
			found = true
		}
	})
	return found
}

// isAcquire matches a new hold, by a worker other than skip (if set) and
// with a token above minToken.
func isAcquire(minToken uint64, skipPID int) func(history.Event) bool {
	return func(ev history.Event) bool {
		return ev.Ev == history.EvAcquire && ev.Token > minToken && ev.PID != skipPID
	}
}

// registerState reads the final register state for the check.
func (c *cluster) registerState() (history.RegisterState, []string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := history.RegisterState{Key: c.lockKey()}
	switch c.base.Register {
	case worker.RegFenced:
		vs, err := register.NewFenced(c.db, st.Key).Versions(ctx)
		if err != nil {
			c.t.Fatalf("reading the register: %v", err)
		}
		final, applied, problems := register.Verify(vs)
		st.Final, st.Applied = final, applied
		return st, problems
	case worker.RegUnfenced:
		v, err := register.NewUnfenced(c.db, st.Key).Value(ctx)
		if err != nil {
			c.t.Fatalf("reading the register: %v", err)
		}
		st.Final = v
	}
	return st, nil
}

// check stops the workers, checks the merged history and adds it to the
// suite's summary. Violations fail the test unless listed in expect (a
// negative control), in which case at least one of each expected kind
// must be found.
func (c *cluster) check(expect ...string) *history.Report {
	c.t.Helper()
	c.stopAll()
	events, truncated, err := history.ReadDir(c.dir)
	if err != nil {
		c.t.Fatalf("reading histories: %v", err)
	}
	r := history.Check(events, nil)
	if c.base.Register != "" {
		st, problems := c.registerState()
		for _, p := range problems {
			r.Violations = append(r.Violations, history.Violation{Kind: history.KindRegister, Key: st.Key, Msg: p})
		}
		history.CheckWrites(r, events, st)
		c.t.Logf("register: final value %d; writes ok %d, rejected as stale %d, unknown %d, accepted after their hold's validity %d",
			st.Final, r.Writes.OK, r.Writes.Stale, r.Writes.Unknown, r.Writes.LateAccepted)
	}
	c.t.Logf("history: %d events (%d truncated files), %d holds, %d handoffs, %d losses (%d excused by a pause or stall), max loss-signal lateness %v, faults %v, %d stalls (max %v)",
		len(events), truncated, r.NumHolds, r.Handoffs, r.Losses, r.Excused, r.MaxLossLateness, r.Faults, r.Stalls, r.MaxStall)
	var unexpected []history.Violation
	for _, v := range r.Violations {
		isExpected := false
		for _, k := range expect {
			isExpected = isExpected || v.Kind == k
		}
		if isExpected {
			c.t.Logf("expected violation (negative control): %v", v)
		} else {
			unexpected = append(unexpected, v)
		}
	}
	for _, v := range unexpected {
		c.t.Errorf("VIOLATION %v", v)
	}
	c.lateWrites()
	c.checkCounts(r)
	detected := true
	for _, k := range expect {
		if !r.Has(k) {
			detected = false
			c.t.Errorf("negative control: expected a %s violation, the checker found none", k)
		}
	}
	summary.add(r, len(unexpected), len(expect) > 0, detected)
	if len(expect) == 0 && r.OK() {
		c.corrupt(events, r)
	}
	return r
}

// proc is one worker process.
type proc struct {
	name       string
	cfg        worker.Config
	cmd        *exec.Cmd
	pid        int
	stdin      io.WriteCloser
	stderr     *tailBuffer
	exited     chan struct{}
	readerDone chan struct{}
	waitErr    error // valid once exited is closed
	killOnce   sync.Once
}

// kill SIGKILLs the process (paused or not) and waits until it is reaped.
func (p *proc) kill() {
	p.killOnce.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	})
	<-p.exited
}

// eventLog collects the events workers echo on stdout, so a test can wait
// for them without ever blocking a worker.
type eventLog struct {
	mu      sync.Mutex
	evs     []history.Event
	changed chan struct{}
}

func (l *eventLog) add(ev history.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
	close(l.changed)
	l.changed = make(chan struct{})
}

// mark returns the index of the next event.
func (l *eventLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.evs)
}

func (l *eventLog) each(f func(history.Event)) {
	l.mu.Lock()
	evs := l.evs
	l.mu.Unlock()
	for _, ev := range evs {
		f(ev)
	}
}

func (l *eventLog) await(from int, timeout time.Duration, pred func(history.Event) bool) (history.Event, int, bool) {
	deadline := time.Now().Add(timeout)
	for {
		l.mu.Lock()
		evs, changed := l.evs, l.changed
		l.mu.Unlock()
		for i := from; i < len(evs); i++ {
			if pred(evs[i]) {
				return evs[i], i + 1, true
			}
		}
		from = len(evs)
		wait := time.Until(deadline)
		if wait <= 0 {
			return history.Event{}, from, false
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sharedCluster is a cluster on the suite's shared server, in a database
// of its own.
func sharedCluster(t *testing.T, base worker.Config) *cluster {
	t.Helper()
	db := mongotest.NewDatabase(t)
	return newCluster(t, mongotest.Shared(t).URI(), db, base)
}

// randDuration returns a duration in [lo, hi).
func randDuration(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo)
}

func ms(ns int64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }

// corrupt runs the checker's negative controls on a real history that
// passed: the same events with one hold moved into the validity of an
// earlier one it conflicts with (readers and weighted holds may share),
// with their two tokens swapped, with a loss signalled late, and with a
// hold relied on past its deadline with no loss signal. Each
// broken copy must be rejected with the matching violation. A history of
// weighted holds is also checked with one weight inflated to the limit
// (weightControl).
func (c *cluster) corrupt(events []history.Event, r *history.Report) {
	c.t.Helper()
	c.weightControl(events, r)
	c.onceControl(events)
	c.setControl(events)
	var a, b *history.Hold
	for _, hs := range r.Holds {
		for i := 1; i < len(hs) && a == nil; i++ {
			for j := i - 1; j >= 0 && a == nil; j-- {
				if hs[i].PID != hs[j].PID && history.Conflicts(hs[i], hs[j]) {
					a, b = hs[j], hs[i]
				}
			}
		}
	}
	if a == nil {
		return
	}
	is := func(ev *history.Event, h *history.Hold) bool {
		return ev.PID == h.PID && ev.Key == h.Key && ev.Token == h.Token
	}
	controls := []struct {
		want   string
		mutate func(evs []history.Event) []history.Event
	}{{
		history.KindOverlap, func(evs []history.Event) []history.Event {
			for i := range evs {
				if is(&evs[i], b) && evs[i].Ev == history.EvAcquire {
					evs[i].T = a.Acquired + (a.ValidEnd()-a.Acquired)/2
				}
			}
			return evs
		},
	}, {
		history.KindTokenOrder, func(evs []history.Event) []history.Event {
			ta, tb := a.Token, b.Token
			for i := range evs {
				switch {
				case is(&evs[i], a):
					evs[i].Token = tb
				case is(&evs[i], b):
					evs[i].Token = ta
				}
			}
			return evs
		},
	}, {
		history.KindLateLoss, func(evs []history.Event) []history.Event {
			// Signal a's loss late, and drop the pauses and stalls of its
			// process that could excuse it.
			dl := a.Deadline
			if a.LibDeadline != 0 {
				dl = a.LibDeadline
			}
			lost := history.Event{Ev: history.EvLost, Worker: a.Worker, PID: a.PID, Key: a.Key, Token: a.Token,
				T: dl + 2*max(a.Margin, int64(time.Millisecond)), DL: dl, Src: history.SrcLib}
			evs = slices.DeleteFunc(evs, func(ev history.Event) bool {
				return is(&ev, a) && ev.Ev == history.EvLost ||
					(ev.Ev == history.EvFault || ev.Ev == history.EvStall) && ev.PID == a.PID
			})
			return append(evs, lost)
		},
	}, {
		history.KindSilentLoss, func(evs []history.Event) []history.Event {
			// Rely on a past its deadline with no loss signal (its end
			// moved there, its loss dropped), with the pauses and stalls
			// of its process dropped as above.
			dl := a.Deadline
			if a.LibDeadline != 0 {
				dl = a.LibDeadline
			}
			end := history.Event{Ev: history.EvEnd, Worker: a.Worker, PID: a.PID, Key: a.Key, Token: a.Token,
				T: dl + 2*max(a.Margin, int64(time.Millisecond)), DL: dl, Src: history.SrcLib}
			evs = slices.DeleteFunc(evs, func(ev history.Event) bool {
				return is(&ev, a) && (ev.Ev == history.EvLost || ev.Ev == history.EvEnd) ||
					(ev.Ev == history.EvFault || ev.Ev == history.EvStall) && ev.PID == a.PID
			})
			return append(evs, end)
		},
	}}
	for _, ctl := range controls {
		evs := ctl.mutate(slices.Clone(events))
		// Detected means: a violation of that kind, naming a hold we broke.
		detected := slices.ContainsFunc(history.Check(evs, nil).Violations, func(v history.Violation) bool {
			return v.Kind == ctl.want && (strings.Contains(v.Msg, fmt.Sprintf("(pid %d)", a.PID)) ||
				strings.Contains(v.Msg, fmt.Sprintf("(pid %d)", b.PID)))
		})
		if !detected {
			c.t.Errorf("negative control: the checker accepted this history with a %s injected", ctl.want)
		}
		summary.negative(detected)
	}
}

// weightControl: a weighted hold that began while another was valid gets
// the whole limit as its weight; the checker must find the limit
// exceeded.
func (c *cluster) weightControl(events []history.Event, r *history.Report) {
	c.t.Helper()
	var h *history.Hold
	for _, hs := range r.Holds {
		for i, x := range hs {
			for _, p := range hs[:i] {
				if h == nil && x.Mode == history.ModeWeighted && p.Mode == x.Mode && p.Limit == x.Limit &&
					p.Acquired <= x.Acquired && x.Acquired < p.ValidEnd() {
					h = x
				}
			}
		}
	}
	if h == nil {
		return
	}
	evs := slices.Clone(events)
	for i := range evs {
		if evs[i].Ev == history.EvAcquire && evs[i].PID == h.PID && evs[i].Key == h.Key && evs[i].Token == h.Token {
			evs[i].Weight = h.Limit
		}
	}
	detected := slices.ContainsFunc(history.Check(evs, nil).Violations, func(v history.Violation) bool {
		return v.Kind == history.KindOverlap && strings.Contains(v.Msg, "over the limit")
	})
	if !detected {
		c.t.Errorf("negative control: the checker accepted this history with a weight inflated to the limit")
	}
	summary.negative(detected)
}

// onceControl: a run of a Once that starts after its key's record was
// confirmed; the checker must find it.
func (c *cluster) onceControl(events []history.Event) {
	c.t.Helper()
	i := slices.IndexFunc(events, func(ev history.Event) bool { return ev.Ev == history.EvOnceDone })
	if i < 0 {
		return
	}
	d := events[i]
	run := history.Event{Ev: history.EvOnceRun, Worker: "control", PID: 1 << 30, Key: d.Key, Token: d.Token + 1000, T: d.T + 1}
	detected := slices.ContainsFunc(history.Check(append(slices.Clone(events), run), nil).Violations, func(v history.Violation) bool {
		return v.Kind == history.KindOnceTwice && strings.Contains(v.Msg, "control(pid")
	})
	if !detected {
		c.t.Errorf("negative control: the checker accepted a Once run after its record was confirmed")
	}
	summary.negative(detected)
}
