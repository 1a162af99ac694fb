//go:build unix

package leadermongo_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
)

// A reproduction of issue 45's start-up stall, not a test that passes or
// fails on its own: members of a Partition join at once on fresh
// collections, the server is frozen (SIGSTOP) for a few seconds just
// after, and the run reports how long the shards took to be owned, with
// the driver's pool, command and heartbeat events of every member's
// client (a file per round), the callers of commands sent under a
// context already ended (DEAD-CTX), and what a fresh client's reads and
// insert took meanwhile.
//
// What it showed (issue 45): the members' slow requests are writes that
// the embedded FerretDB on SQLite is slow to answer (one writer at a
// time per database file, each waiting for the lock in SQLite's busy
// handler, up to 10 s, in no order), while reads stay fast; a fresh
// client's insert is as slow. The driver's pool is not the cause: after
// the server resumed no checkout waited much over a second, no pool was
// cleared, no heartbeat failed. With the PostgreSQL backend
// (DSYNC_MONGOTEST_BACKEND=postgresql) writes stay fast.
//
//	DSYNC_FREEZE=1 go test -v -run TestFreezeRepro -timeout 1h ./leader/mongo/
//
// DSYNC_FREEZE_ROUNDS (default 5), DSYNC_FREEZE_MEMBERS (7),
// DSYNC_FREEZE_SHARDS (16), DSYNC_FREEZE_FOR (5s),
// DSYNC_FREEZE_SHARED=1 (every member on one MongoDB client, not one
// each), DSYNC_FREEZE_OPTS (client options: "maxconnecting=N", "pool=N" for
// maxPoolSize, "minpool=N", comma separated) and DSYNC_FREEZE_DIR (where
// the timelines go; default a temp dir, named in the log).
func TestFreezeRepro(t *testing.T) {
	if ok, _ := strconv.ParseBool(os.Getenv("DSYNC_FREEZE")); !ok {
		t.Skip("a reproduction: DSYNC_FREEZE=1 runs it")
	}
	rounds := envInt("DSYNC_FREEZE_ROUNDS", 5)
	dir := os.Getenv("DSYNC_FREEZE_DIR")
	if dir == "" {
		dir = t.TempDir()
		if keep, err := os.MkdirTemp("", "dsync-freeze-"); err == nil {
			dir = keep
		}
	}
	srv := mongotest.StartProcess(t)
	var took []time.Duration
	for r := range rounds {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) {
			d := freezeRound(t, srv, filepath.Join(dir, fmt.Sprintf("round%d.log", r)))
			took = append(took, d)
		})
	}
	t.Logf("all shards owned, after the server resumed (-1ns: not within two minutes): %v", took)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// timeline collects timestamped lines from every member's client.
type timeline struct {
	t0 time.Time
	mu sync.Mutex
	ls []tline
	// After the server resumed (resumed, since t0): the members'
	// commands that took a second or more, by name, and the longest;
	// the fresh clients' longest read and insert.
	resumed           time.Duration
	slow              map[string]int
	longest           map[string]time.Duration
	probeRead, probeW time.Duration
}

// afterResume records a member's command that started after the server
// resumed.
func (tl *timeline) afterResume(name string, at, d time.Duration) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.resumed == 0 || at < tl.resumed {
		return
	}
	if d >= time.Second {
		tl.slow[name]++
	}
	tl.longest[name] = max(tl.longest[name], d)
}

// summary says what afterResume and the probes recorded.
func (tl *timeline) summary() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var names []string
	for n := range tl.longest {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("members' commands sent after the server resumed (name: over 1 s, longest):")
	for _, n := range names {
		fmt.Fprintf(&b, " %s %d %v;", n, tl.slow[n], tl.longest[n].Round(time.Millisecond))
	}
	fmt.Fprintf(&b, " fresh clients' longest read %v, longest insert %v", tl.probeRead.Round(time.Millisecond), tl.probeW.Round(time.Millisecond))
	return b.String()
}

type tline struct {
	at  time.Duration
	who string
	msg string
}

func (tl *timeline) add(who, format string, args ...any) {
	at := time.Since(tl.t0)
	tl.mu.Lock()
	tl.ls = append(tl.ls, tline{at, who, fmt.Sprintf(format, args...)})
	tl.mu.Unlock()
}

func (tl *timeline) write(path string) error {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	sort.SliceStable(tl.ls, func(i, j int) bool { return tl.ls[i].at < tl.ls[j].at })
	for _, l := range tl.ls {
		fmt.Fprintf(&b, "%9.3f %-6s %s\n", l.at.Seconds(), l.who, l.msg)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// tlWriter adds what a logger writes to the timeline.
type tlWriter struct {
	tl  *timeline
	who string
}

func (w tlWriter) Write(p []byte) (int, error) {
	w.tl.add(w.who, "log %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// clientStats sums up one client's events.
type clientStats struct {
	mu            sync.Mutex
	cmds, failed  int
	slowCmds      []string // commands over a second: start, name, duration
	maxCmd        time.Duration
	checkouts     int
	maxCheckout   time.Duration
	slowCheckouts int // over 500 ms
	created       int
	maxReady      time.Duration
	closed        map[string]int
	cleared       int
	hbFailed      int
	inflight      map[int64]startedCmd
}

type startedCmd struct {
	name string
	at   time.Duration
	conn string
}

// pending lists the commands sent and not answered yet.
func (cs *clientStats) pending() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []string
	for id, s := range cs.inflight {
		out = append(out, fmt.Sprintf("%s req %d on %s since %.3f", s.name, id, s.conn, s.at.Seconds()))
	}
	slices.Sort(out)
	return out
}

func (cs *clientStats) String() string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return fmt.Sprintf("cmds %d (failed %d, longest %v, over 1 s %d); checkouts %d (longest %v, over 500 ms %d); conns created %d (longest to ready %v), closed %v; pool cleared %d; heartbeats failed %d",
		cs.cmds, cs.failed, cs.maxCmd.Round(time.Millisecond), len(cs.slowCmds), cs.checkouts, cs.maxCheckout.Round(time.Millisecond), cs.slowCheckouts,
		cs.created, cs.maxReady.Round(time.Millisecond), cs.closed, cs.cleared, cs.hbFailed)
}

// monitored returns client options that report every event of the
// client named who to tl and cs.
func monitored(tl *timeline, who string, cs *clientStats) *options.ClientOptions {
	cs.inflight = map[int64]startedCmd{}
	done := func(id int64, d time.Duration, err error) {
		cs.mu.Lock()
		s := cs.inflight[id]
		delete(cs.inflight, id)
		tl.afterResume(s.name, s.at, d)
		cs.cmds++
		if err != nil {
			cs.failed++
		}
		cs.maxCmd = max(cs.maxCmd, d)
		if d > time.Second {
			cs.slowCmds = append(cs.slowCmds, fmt.Sprintf("%.3f %s %v", s.at.Seconds(), s.name, d.Round(time.Millisecond)))
		}
		cs.mu.Unlock()
		if err != nil {
			tl.add(who, "cmd %s req %d on %s FAILED after %v (started %.3f): %v", s.name, id, s.conn, d.Round(time.Millisecond), s.at.Seconds(), err)
		} else if d > 200*time.Millisecond {
			tl.add(who, "cmd %s req %d on %s took %v (started %.3f)", s.name, id, s.conn, d.Round(time.Millisecond), s.at.Seconds())
		}
	}
	cmd := &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			if ctx.Err() != nil {
				deadStarts(tl, who, e.CommandName, ctx)
			}
			cs.mu.Lock()
			cs.inflight[e.RequestID] = startedCmd{e.CommandName, time.Since(tl.t0), e.ConnectionID}
			cs.mu.Unlock()
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) { done(e.RequestID, e.Duration, nil) },
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			done(e.RequestID, e.Duration, e.Failure)
		},
	}
	pool := &event.PoolMonitor{Event: func(e *event.PoolEvent) {
		switch e.Type {
		case event.ConnectionCheckOutStarted, event.ConnectionCheckedIn:
			return
		case event.ConnectionCheckedOut:
			cs.mu.Lock()
			cs.checkouts++
			cs.maxCheckout = max(cs.maxCheckout, e.Duration)
			slow := e.Duration > 500*time.Millisecond
			if slow {
				cs.slowCheckouts++
			}
			cs.mu.Unlock()
			if e.Duration > 100*time.Millisecond {
				tl.add(who, "pool checked out conn %d after %v", e.ConnectionID, e.Duration.Round(time.Millisecond))
			}
			return
		case event.ConnectionCreated:
			cs.mu.Lock()
			cs.created++
			cs.mu.Unlock()
		case event.ConnectionReady:
			cs.mu.Lock()
			cs.maxReady = max(cs.maxReady, e.Duration)
			cs.mu.Unlock()
		case event.ConnectionClosed:
			cs.mu.Lock()
			if cs.closed == nil {
				cs.closed = map[string]int{}
			}
			cs.closed[e.Reason]++
			cs.mu.Unlock()
		case event.ConnectionPoolCleared:
			cs.mu.Lock()
			cs.cleared++
			cs.mu.Unlock()
		}
		msg := fmt.Sprintf("pool %s conn %d", e.Type, e.ConnectionID)
		if e.Duration != 0 {
			msg += fmt.Sprintf(" after %v", e.Duration.Round(time.Millisecond))
		}
		if e.Reason != "" {
			msg += " reason " + e.Reason
		}
		if e.Error != nil {
			msg += fmt.Sprintf(" error %v", e.Error)
		}
		tl.add(who, "%s", msg)
	}}
	sdam := &event.ServerMonitor{
		ServerHeartbeatFailed: func(e *event.ServerHeartbeatFailedEvent) {
			cs.mu.Lock()
			cs.hbFailed++
			cs.mu.Unlock()
			tl.add(who, "heartbeat FAILED after %v: %v", e.Duration.Round(time.Millisecond), e.Failure)
		},
		ServerHeartbeatSucceeded: func(e *event.ServerHeartbeatSucceededEvent) {
			if e.Duration > 200*time.Millisecond {
				tl.add(who, "heartbeat took %v", e.Duration.Round(time.Millisecond))
			}
		},
		ServerDescriptionChanged: func(e *event.ServerDescriptionChangedEvent) {
			tl.add(who, "server description %v -> %v", e.PreviousDescription.Kind, e.NewDescription.Kind)
		},
	}
	return options.Client().SetMonitor(cmd).SetPoolMonitor(pool).SetServerMonitor(sdam)
}

// deadSeen holds the callers already reported by deadStarts.
var deadSeen sync.Map

// deadStarts reports, once per caller, a command sent under a context
// that had already ended: the stack of the goroutine that sends it.
func deadStarts(tl *timeline, who, name string, ctx context.Context) {
	st := string(debug.Stack())
	// Keep the frames above the driver's.
	var keep []string
	for _, l := range strings.Split(st, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "github.com/go-dsync/dsync/") || strings.HasPrefix(l, "github.com/go-dsync/dsync/leader/mongo_test.") {
			continue
		}
		if i := strings.LastIndex(l, "("); i > 0 {
			l = l[:i] // the arguments: pointers, different at every call
		}
		keep = append(keep, strings.TrimPrefix(l, "github.com/go-dsync/dsync/"))
	}
	key := strings.Join(keep, " | ")
	if _, dup := deadSeen.LoadOrStore(key, true); dup {
		return
	}
	tl.add(who, "DEAD-CTX %s (%v) sent by: %s", name, context.Cause(ctx), key)
}

// freezeOpts are the client options DSYNC_FREEZE_OPTS asks for.
func freezeOpts(t *testing.T) *options.ClientOptions {
	o := options.Client()
	for _, kv := range strings.Split(os.Getenv("DSYNC_FREEZE_OPTS"), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("DSYNC_FREEZE_OPTS: %s: %v", kv, err)
		}
		switch k {
		case "maxconnecting":
			o.SetMaxConnecting(uint64(n))
		case "pool":
			o.SetMaxPoolSize(uint64(n))
		case "minpool":
			o.SetMinPoolSize(uint64(n))
		default:
			t.Fatalf("DSYNC_FREEZE_OPTS: unknown %s", k)
		}
	}
	return o
}

// freezeRound runs one round and returns how long after the server
// resumed every shard was owned.
func freezeRound(t *testing.T, srv *mongotest.Process, logPath string) time.Duration {
	const ttl = 3 * time.Second
	members := envInt("DSYNC_FREEZE_MEMBERS", 7)
	shards := envInt("DSYNC_FREEZE_SHARDS", 16)
	freezeFor := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("DSYNC_FREEZE_FOR")); err == nil {
		freezeFor = d
	}
	tl := &timeline{t0: time.Now(), slow: map[string]int{}, longest: map[string]time.Duration{}}
	// The driver's hook on its background reads is deprecated as internal;
	// no public monitor reports a pending read, which this diagnosis needs.
	//lint:ignore SA1019 the one view of the driver's pending reads (see above).
	topology.BGReadCallback = func(addr string, start, read time.Time, errs []error, closed bool) {
		tl.add("bgread", "pending read from %.3f took %v, closed %v, errs %v", start.Sub(tl.t0).Seconds(), read.Sub(start).Round(time.Millisecond), closed, errs)
	}
	//lint:ignore SA1019 unsets the hook set above.
	t.Cleanup(func() { topology.BGReadCallback = nil })

	name := mongotest.DatabaseName(t)
	extra := freezeOpts(t)
	stats := make([]*clientStats, members)
	parts := make([]*leader.Partition, members)
	shared, _ := strconv.ParseBool(os.Getenv("DSYNC_FREEZE_SHARED"))
	var one *mongo.Client
	if shared {
		stats[0] = &clientStats{}
		one = mongotest.NewClient(t, srv.URI(), monitored(tl, "all", stats[0]), extra)
	}
	for i := range members {
		who := fmt.Sprintf("m%d", i)
		client := one
		if !shared {
			stats[i] = &clientStats{}
			client = mongotest.NewClient(t, srv.URI(), monitored(tl, who, stats[i]), extra)
		}
		logger := slog.New(slog.NewTextHandler(tlWriter{tl, who}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		lp := newElections(t, client.Database(name), dsync.ClientWithTTL(ttl), dsync.ClientWithLogger(logger), dsyncmongo.WithLogger(logger))
		p, err := leader.NewPartition(lp.c, "job", shards, leader.WithMembers(lp.members))
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = p
	}

	var owners sync.Map // shard → member
	var ownedN atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tl.add("test", "members start")
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = p.Run(ctx, func(ctx context.Context, s int) error {
				owners.Store(s, i)
				ownedN.Add(1)
				tl.add(fmt.Sprintf("m%d", i), "OWNS shard %d", s)
				<-ctx.Done()
				ownedN.Add(-1)
				owners.Delete(s)
				tl.add(fmt.Sprintf("m%d", i), "gives up shard %d", s)
				return nil
			})
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
		for _, p := range parts {
			_ = p.Close()
		}
	}()

	pid := srv.Pid()
	time.Sleep(time.Duration(rand.Int64N(int64(1200 * time.Millisecond))))
	tl.add("test", "SIGSTOP the server (pid %d); %d shards owned", pid, ownedN.Load())
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := func() {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Error(err)
		}
	}
	time.Sleep(freezeFor)
	resumed()
	tResume := time.Since(tl.t0)
	tl.mu.Lock()
	tl.resumed = tResume
	tl.mu.Unlock()
	tl.add("test", "SIGCONT the server")

	// A fresh client's view meanwhile: a ping and a read of the members.
	probeDone := make(chan struct{})
	probeStop := make(chan struct{})
	go func() {
		defer close(probeDone)
		for {
			select {
			case <-probeStop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			freshProbe(tl, srv.URI(), name)
		}
	}()

	const settleFor = 120 * time.Second
	deadline := time.Now().Add(settleFor)
	var took time.Duration
	for {
		if int(ownedN.Load()) == shards {
			took = time.Since(tl.t0) - tResume
			tl.add("test", "ALL %d shards owned", shards)
			break
		}
		if time.Now().After(deadline) {
			took = -1
			tl.add("test", "NOT all shards owned within %v: %d", settleFor, ownedN.Load())
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(probeStop)
	<-probeDone
	for i, cs := range stats {
		if cs == nil {
			continue
		}
		t.Logf("m%d: %v", i, cs)
		if p := cs.pending(); len(p) > 0 {
			t.Logf("m%d unanswered: %s", i, strings.Join(p, "; "))
		}
		cs.mu.Lock()
		if len(cs.slowCmds) > 0 {
			t.Logf("m%d slow commands: %s", i, strings.Join(cs.slowCmds[:min(len(cs.slowCmds), 12)], "; "))
		}
		cs.mu.Unlock()
	}
	var own []string
	owners.Range(func(k, v any) bool { own = append(own, fmt.Sprintf("%v:m%v", k, v)); return true })
	slices.Sort(own)
	when := fmt.Sprintf("every shard owned %v after the server resumed", took.Round(time.Millisecond))
	if took < 0 {
		when = fmt.Sprintf("NOT every shard owned within %v after the server resumed", settleFor)
	}
	t.Logf("%s (frozen %v, from %.3f s after the members started); now %d of %d owned: %v", when, freezeFor, (tResume - freezeFor).Seconds(), ownedN.Load(), shards, own)
	t.Logf("%s", tl.summary())
	if err := tl.write(logPath); err != nil {
		t.Error(err)
	}
	t.Logf("timeline: %s", logPath)
	return took
}

// freshProbe connects a new client and times a ping and a read of the
// members' collection.
func freshProbe(tl *timeline, uri, db string) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		tl.add("probe", "connect: %v", err)
		return
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	err = c.Ping(ctx, nil)
	ping := time.Since(t0)
	t1 := time.Now()
	n := -1
	if err == nil {
		n, err = countDocs(ctx, c.Database(db).Collection("dsync_members"))
	}
	members := time.Since(t1)
	t2 := time.Now()
	l := -1
	if err == nil {
		l, err = countDocs(ctx, c.Database(db).Collection("dsync_locks"))
	}
	locks := time.Since(t2)
	t3 := time.Now()
	if err == nil {
		// A write to the same database (one SQLite file on FerretDB's
		// SQLite backend), beside the reads.
		_, err = c.Database(db).Collection("freeze_probe").InsertOne(ctx, bson.D{{Key: "at", Value: time.Now()}})
	}
	tl.mu.Lock()
	tl.probeRead = max(tl.probeRead, members, locks)
	if err == nil {
		tl.probeW = max(tl.probeW, time.Since(t3))
	}
	tl.mu.Unlock()
	tl.add("probe", "fresh client: ping %v, read members %v (%d docs), read locks %v (%d docs), insert %v, err %v",
		ping.Round(time.Millisecond), members.Round(time.Millisecond), n, locks.Round(time.Millisecond), l, time.Since(t3).Round(time.Millisecond), err)
}

func countDocs(ctx context.Context, c *mongo.Collection) (int, error) {
	cur, err := c.Find(ctx, bson.D{})
	if err != nil {
		return 0, err
	}
	var docs []bson.Raw
	err = cur.All(ctx, &docs)
	return len(docs), err
}
