package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/clienthook"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

var quiet = clienthook.KeyLogger.(func(*slog.Logger) dsync.Option)(slog.New(slog.DiscardHandler))

// errTally counts the store errors a Client's primitives report, by text.
type errTally struct{ m sync.Map }

// option is the ClientOption that reports to the tally.
func (e *errTally) option() dsync.ClientOption {
	return dsync.ClientWithErrorHandler(func(err error) {
		n, _ := e.m.LoadOrStore(err.Error(), new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	})
}

// log logs each error text with its count.
func (e *errTally) log(t *testing.T) {
	e.m.Range(func(k, v any) bool {
		t.Logf("backend error reported %d times: %s", v.(*atomic.Int32).Load(), k)
		return true
	})
}

func newMutex(t *testing.T, c *dsync.Client, key string, opts ...dsync.Option) *dsync.Mutex {
	t.Helper()
	m, err := dsync.NewMutex(c, key, append([]dsync.Option{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMutexHammer: processes' worth of Mutexes, each with its own client and
// backend, take one key in turns, waiting by polling (wake-ups off). Nobody
// is ever inside with another, as seen in memory and by a counter document
// updated by read-then-write under the lock (an overlap loses an
// increment); tokens increase in grant order.
func TestMutexHammer(t *testing.T) {
	t.Parallel()
	procs, rounds := 8, 100
	if !longtest.Enabled() {
		rounds = 8 // 64 grants, each a handoff between processes
		t.Logf("short form: %d rounds instead of 100 (%s=1 for all)", rounds, longtest.Env)
	}
	hammer(t, procs, rounds, withoutWakeups())
}

// TestMutexHammerWakeups: the same with wake-ups (the default), where each
// release wakes the next claim's process through an event. On FerretDB
// every waiting process's tailable cursor costs the server a query every
// few milliseconds, so a grant takes longer here: fewer rounds.
func TestMutexHammerWakeups(t *testing.T) {
	t.Parallel()
	procs, rounds := 6, 40
	if !longtest.Enabled() {
		rounds = 5 // 30 grants, each woken by the release before it
		t.Logf("short form: %d rounds instead of 40 (%s=1 for all)", rounds, longtest.Env)
	}
	hammer(t, procs, rounds, dsync.ClientWithSafetyPoll(2*time.Second))
}

// hammerPoll is the hammer's poll interval. A process pauses after
// Unlock, up to a poll interval: otherwise it would relock at once, ahead
// of the sleeping waiters, and run all its rounds in a row. Waiters poll
// more often than by default.
const hammerPoll = 100 * time.Millisecond

func hammer(t *testing.T, procs, rounds int, opts ...any) {
	var errs errTally
	hammerProcs(t, newProcs(t, procs, append([]any{dsync.ClientWithPollInterval(hammerPoll), errs.option()}, opts...)...), rounds)
	errs.log(t)
}

// hammerProcs has the processes ps take one key in turns, rounds times
// each, and checks what hammer's doc says.
func hammerProcs(t *testing.T, ps []*proc, rounds int) {
	const poll = hammerPoll
	procs := len(ps)
	ctx := testCtx(t, 3*time.Minute)

	var (
		inside   atomic.Int32
		mu       sync.Mutex
		tokens   []uint64
		grants   []int // proc of each grant
		failures atomic.Int32
	)
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}

	for _, p := range ps {
		p.cmd.take()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, p := range ps {
		m := newMutex(t, p.b.Client, "hammer")
		counter := p.db.Collection("counter")
		wg.Go(func() {
			for r := range rounds {
				if err := m.LockContext(ctx); err != nil {
					fail("proc %d round %d: LockContext: %v", i, r, err)
					return
				}
				if n := inside.Add(1); n != 1 {
					fail("proc %d: %d holders inside at once", i, n)
				}
				mu.Lock()
				tokens = append(tokens, m.Token())
				grants = append(grants, i)
				mu.Unlock()

				var c struct{ N int }
				err := counter.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&c)
				if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
					fail("proc %d: reading the counter: %v", i, err)
				}
				_, err = counter.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}},
					bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: c.N + 1}}}}, options.UpdateOne().SetUpsert(true))
				if err != nil {
					fail("proc %d: writing the counter: %v", i, err)
				}

				select {
				case <-m.Lost():
					fail("proc %d round %d: hold lost", i, r)
				default:
				}
				inside.Add(-1)
				if err := m.UnlockContext(ctx); err != nil {
					fail("proc %d round %d: UnlockContext: %v", i, r, err)
				}
				time.Sleep(rand.N(poll))
			}
		})
	}
	wg.Wait()
	took := time.Since(start)

	total := procs * rounds
	var c struct{ N int }
	if err := ps[0].db.Collection("counter").FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.N != total {
		t.Errorf("counter = %d, want %d: increments were lost to overlapping holders", c.N, total)
	}
	if len(tokens) != total {
		t.Errorf("%d grants, want %d", len(tokens), total)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			fail("grant %d has token %d after %d", i, tokens[i], tokens[i-1])
		}
	}
	cmds := map[string]int{}
	for i, p := range ps {
		if i == 0 {
			t.Logf("mean command latency, process 0: %v", p.cmd.latency())
		}
		for k, v := range p.cmd.take() {
			cmds[k] += v
		}
	}
	switches := 0
	for i := 1; i < len(grants); i++ {
		if grants[i] != grants[i-1] {
			switches++
		}
	}
	t.Logf("%d of %d grants went to another process than the previous one", switches, len(grants))
	if switches < len(grants)/4 {
		t.Errorf("only %d handoffs between processes in %d grants: the test hardly contends", switches, len(grants))
	}
	t.Logf("%d procs × %d rounds: %v (%v per handoff); commands %v (counter reads/writes included)",
		procs, rounds, took.Round(time.Millisecond), (took / time.Duration(total)).Round(time.Microsecond), cmds)
}

// crashable is a store whose process can "crash": from then on its
// renewals and ends never reach the server.
type crashable struct {
	driver.Store
	crashed atomic.Bool

	mu          sync.Mutex
	lastRenewal time.Time // send time of the last applied renewal
}

var errCrashed = errors.New("process crashed")

// crashableBackend returns a Client on db whose store is c.
func crashableBackend(t *testing.T, db *mongo.Database, c *crashable, opts ...any) *testClient {
	return newBackend(t, db, append(opts, clienthook.Settings{WrapStore: func(s driver.Store) driver.Store {
		c.Store = s
		return c
	}})...)
}

func (c *crashable) renewed(sent time.Time) {
	c.mu.Lock()
	c.lastRenewal = sent
	c.mu.Unlock()
}

func (c *crashable) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	if c.crashed.Load() {
		return false, errCrashed
	}
	sent := time.Now()
	found, err := c.Store.RenewSession(ctx, id, gen, expires)
	if err == nil && found {
		c.renewed(sent)
	}
	return found, err
}

// InsertSession: a generation above 0 is a renewal's.
func (c *crashable) InsertSession(ctx context.Context, s driver.Session) error {
	if s.Gen > 0 && c.crashed.Load() {
		return errCrashed
	}
	sent := time.Now()
	err := c.Store.InsertSession(ctx, s)
	if err == nil && s.Gen > 0 {
		c.renewed(sent)
	}
	return err
}

// Roles: the store's, with renewals through the record of up-time (a
// Client's with an outage grace, the default) crashing too.
func (c *crashable) Roles() driver.Roles {
	r := c.Store.Roles()
	if r.Uptime != nil {
		r.Uptime = crashableUptime{UptimeStore: r.Uptime, c: c}
	}
	return r
}

// crashableUptime is the record of up-time of a crashable store: its
// renewals fail once the process crashed.
type crashableUptime struct {
	driver.UptimeStore
	c *crashable
}

func (u crashableUptime) RenewSessionUp(ctx context.Context, id string, gen int, expires time.Time, up []driver.UpSpan) (time.Time, bool, error) {
	if u.c.crashed.Load() {
		return time.Time{}, false, errCrashed
	}
	sent := time.Now()
	applied, found, err := u.UptimeStore.RenewSessionUp(ctx, id, gen, expires, up)
	if err == nil && found {
		u.c.renewed(sent)
	}
	return applied, found, err
}

// InsertSessionUp: a generation above 0 is a renewal's.
func (u crashableUptime) InsertSessionUp(ctx context.Context, s driver.Session) error {
	if s.Gen > 0 && u.c.crashed.Load() {
		return errCrashed
	}
	sent := time.Now()
	err := u.UptimeStore.InsertSessionUp(ctx, s)
	if err == nil && s.Gen > 0 {
		u.c.renewed(sent)
	}
	return err
}

func (c *crashable) Insert(ctx context.Context, d driver.Doc) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.Store.Insert(ctx, d)
}

func TestMutexCrashedHolderIsTakenOverAfterTTL(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	ps := newProcs(t, 2, dsync.ClientWithTTL(ttl))
	ctx := testCtx(t, time.Minute)
	cb := &crashable{}
	m1 := newMutex(t, crashableBackend(t, ps[0].db, cb, dsync.ClientWithTTL(ttl)).Client, "k")
	m2 := newMutex(t, ps[1].b.Client, "k")
	_, _ = ps[1].b.Current(ctx, "k") // start m2's estimator outside the timing

	before := time.Now()
	if err := m1.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	tok1 := m1.Token()
	time.Sleep(ttl / 2) // renewed once, normally
	cb.crashed.Store(true)

	if err := m2.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(before)
	// The session ran until TTL after the send of its last write: the
	// open, or the renewal (normally one, at TTL/3) before the crash.
	cb.mu.Lock()
	last := before
	if cb.lastRenewal.After(last) {
		last = cb.lastRenewal
	}
	cb.mu.Unlock()
	t.Logf("taken over %v after the crashed holder's acquire (TTL %v, crash at %v, last renewal sent at %v)",
		took.Round(time.Millisecond), ttl, ttl/2, last.Sub(before).Round(time.Millisecond))
	if end := last.Sub(before) + ttl; took < end {
		t.Errorf("taken over %v after the holder's acquire, before its lease ended (%v)", took, end)
	}
	if m2.Token() <= tok1 {
		t.Errorf("token %d after %d", m2.Token(), tok1)
	}
	select {
	case <-m1.Lost():
	case <-time.After(time.Second):
		t.Error("the crashed holder's Lost() is still open after the takeover")
	}
	if err := m1.UnlockContext(ctx); !errors.Is(err, dsync.ErrLost) {
		t.Errorf("the crashed holder's Unlock = %v, want ErrLost", err)
	}
	info, err := ps[1].b.Current(ctx, "k")
	if err != nil || info.Owner != clienthook.OwnerOf(m2) || !info.Live {
		t.Errorf("Current = %+v, %v; want m2's live hold", info, err)
	}
	if err := m2.UnlockContext(ctx); err != nil {
		t.Error(err)
	}
}

// TestMutexSteadyStateCommands counts the commands of Lock+Unlock cycles of
// one uncontended Mutex, wake-ups on: the claim and the release marker (two
// inserts), plus, every 16 epochs, a floor insert and a prune, and a floor
// read at most once a second.
func TestMutexSteadyStateCommands(t *testing.T) {
	p := newProcs(t, 1, dsync.ClientWithTTL(time.Minute))[0]
	ctx := testCtx(t, 2*time.Minute)
	// A TTL long enough that no renewal falls into the loop.
	m := newMutex(t, p.b.Client, "k")
	cycles := 320
	cycle := func() {
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // the first Lock also creates the index, measures the clock, opens the session
	// ... and starts following wake-up events, which costs a create, an
	// insert and a find, once.
	waitWakeups(t, p.b)
	waitRecorded(t, ctx, p.db, 1) // ... and records the key, in the background
	p.cmd.take()
	start := time.Now()
	for range cycles {
		cycle()
	}
	took := time.Since(start)
	n := p.cmd.take()
	per := func(name string) float64 { return float64(n[name]) / float64(cycles) }
	t.Logf("%d cycles in %v (%v each): %v; per cycle: %.3f insert, %.3f update, %.3f find, %.3f delete",
		cycles, took.Round(time.Millisecond), (took / time.Duration(cycles)).Round(time.Microsecond), n,
		per("insert"), per("update"), per("find"), per("delete"))
	if floors := n["insert"] - 2*cycles; floors < 0 || floors > cycles/16+1 {
		t.Errorf("%d inserts for %d cycles: want two per cycle (claim, release), and a floor per 16", n["insert"], cycles)
	}
	if n["update"] != 0 {
		t.Errorf("%d updates, want none", n["update"])
	}
	if d := per("delete"); d > 1.0/16+0.01 {
		t.Errorf("%.3f deletes per cycle, want at most one prune per 16", d)
	}
	// A floor read at most once a second, and a read of the floor's claim
	// before each prune (which follows the cycles, not the time).
	if f := float64(n["find"]); f > took.Seconds()+2+float64(n["delete"]) {
		t.Errorf("%d finds in %v with %d prunes, want about one floor read per second and one read per prune", n["find"], took, n["delete"])
	}
}

// TestCoverageOfManyHeldKeysIsOneInsertPerBucket: the gates that keep the
// segments of the keys a process holds covered go to the store in one
// insert per bucket, whatever the number of keys (buckets of a second
// here, fastPrune). One insert per key and bucket was the cost before.
func TestCoverageOfManyHeldKeysIsOneInsertPerBucket(t *testing.T) {
	t.Parallel()
	const keys = 30
	p := newProcs(t, 1, fastPrune, dsync.ClientWithTTL(time.Second), dsync.ClientWithIdleAge(0))[0] // no sweeps: their lock's inserts are not gates
	ctx := testCtx(t, time.Minute)
	ms := make([]*dsync.Mutex, keys)
	for i := range ms {
		ms[i] = newMutex(t, p.b.Client, fmt.Sprintf("held-%02d", i))
		if err := ms[i].LockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sent := protocolCommands(p, nil)
	start := time.Now()
	time.Sleep(3 * time.Second)
	n := sent()
	elapsed := time.Since(start)
	for _, m := range ms {
		_ = m.UnlockContext(ctx)
	}
	inserts := n["insert "+DefaultCollection]
	// A bucket begins each second: one insert for each bucket begun
	// while counting, and one more at most for a refresh in flight.
	buckets := int(elapsed/time.Second) + 1
	if inserts < 1 || inserts > buckets+1 {
		t.Fatalf("holding %d keys for %v sent %d inserts of gates (%v), want one per bucket (1 to %d)", keys, elapsed.Round(time.Millisecond), inserts, n, buckets+1)
	}
}

// TestMutexRenewsManyLocks holds many locks through one backend and checks
// that each renew interval costs one findAndModify of the session
// document (beside a find of its revocation every two thirds of a TTL),
// and that none is lost.
func TestMutexRenewsManyLocks(t *testing.T) {
	t.Parallel()
	n := 1000
	if !longtest.Enabled() {
		n = 200
	}
	var (
		mu      sync.Mutex
		updates []time.Duration // durations of succeeded renewals
	)
	cmd := &counter{
		onSucceeded: func(kind string, e *event.CommandSucceededEvent) {
			if kind == "findAndModify" {
				mu.Lock()
				updates = append(updates, e.Duration)
				mu.Unlock()
			}
		},
	}
	db := mongotest.NewDatabase(t, cmd.monitor())
	const interval = time.Second
	b := newBackend(t, db, dsync.ClientWithTTL(10*time.Second), dsync.ClientWithRenewInterval(interval))
	ctx := testCtx(t, 5*time.Minute)
	ms := make([]*dsync.Mutex, n)
	start := time.Now()
	for i := range ms {
		ms[i] = newMutex(t, b.Client, fmt.Sprintf("lock-%04d", i))
		if err := ms[i].LockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitRecorded(t, ctx, db, n)
	t.Logf("locked %d keys in %v: %v", n, time.Since(start).Round(time.Millisecond), cmd.take())
	mu.Lock()
	updates = nil
	mu.Unlock()
	time.Sleep(5*interval + interval/2)
	n5 := cmd.take()
	mu.Lock()
	durations := append([]time.Duration(nil), updates...)
	mu.Unlock()
	t.Logf("5.5 renew intervals holding %d locks: %v; renewal durations %v", n, n5, durations)
	if got := n5["findAndModify"]; got < 5 || got > 6 {
		t.Errorf("%d renewals (findAndModify) in 5.5 renew intervals, want 5 or 6: one per interval for all %d locks", got, n)
	}
	// A bucket (five minutes) may begin within the 5.5 intervals: then the
	// gates of all the keys held go in one insert, and the store's
	// protocol document is read after it (one find) to confirm them. The
	// session's revocation is read (one find) every two thirds of a TTL:
	// once at most in 5.5 s with a 10 s TTL.
	if lockOps(n5) != n5["findAndModify"]+n5["insert"]+n5["find"] || n5["insert"] > 1 || n5["find"] > 1+n5["insert"] {
		t.Errorf("commands %v while holding: want only the session's renewals, a read of its revocation per two thirds of a TTL, and one insert of gates at most, with a read of the protocol document after it", n5)
	}
	for i, m := range ms {
		select {
		case <-m.Lost():
			t.Fatalf("lock %d lost", i)
		default:
		}
	}
	for _, m := range ms {
		if err := m.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTryLockWithTheServerGone: with the server killed under a process
// that had used it (its session open, its connections made), TryLock
// returns false within the try timeout, not after about a TTL, and
// TryLockContext says the server did not answer, not that the lock is
// held. The client keeps the driver's default server selection timeout
// (30 s), as a user's would.
func TestTryLockWithTheServerGone(t *testing.T) {
	t.Parallel()
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	b := newBackend(t, db, dsync.ClientWithTTL(dsync.DefaultTTL))
	m := newMutex(t, b.Client, "k")
	ctx := context.Background()
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	defer srv.Restart() // so that the cleanups' Close finds a server
	// The bound is checked against the TTL, which today's code took: the
	// slack is for a loaded machine's scheduling, not a measure of speed.
	const slack = 3 * time.Second
	start := time.Now()
	if m.TryLock() {
		t.Fatal("TryLock with the server gone succeeded")
	}
	took := time.Since(start)
	t.Logf("TryLock with the server gone: false after %v", took.Round(time.Millisecond))
	if took > dsync.DefaultTryTimeout+slack {
		t.Errorf("TryLock with the server gone returned after %v, want within the try timeout %v", took, dsync.DefaultTryTimeout)
	}
	start = time.Now()
	err := m.TryLockContext(ctx)
	took = time.Since(start)
	t.Logf("TryLockContext with the server gone: %v after %v", err, took.Round(time.Millisecond))
	switch {
	case err == nil:
		t.Fatal("TryLockContext with the server gone succeeded")
	case errors.Is(err, dsync.ErrHeld):
		t.Errorf("TryLockContext with the server gone = %v, want the server's error, not ErrHeld", err)
	case took > dsync.DefaultTryTimeout+slack:
		t.Errorf("TryLockContext with the server gone returned after %v, want within the try timeout %v", took, dsync.DefaultTryTimeout)
	}
}

func TestMutexUnreachableServer(t *testing.T) {
	b := newBackend(t, offlineDB(t))
	m := newMutex(t, b.Client, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	err := m.LockContext(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("LockContext against no server = %v, want the context's cause", err)
	}
	t.Logf("LockContext: %v", err)
	if m.TryLock() {
		t.Error("TryLock against no server succeeded")
	}
}
