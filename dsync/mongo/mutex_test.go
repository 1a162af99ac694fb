package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/go-dsync/dsync/internal/mongotest"
)

var quiet = dsync.WithLogger(slog.New(slog.DiscardHandler))

func newMutex(t *testing.T, b dsync.Backend, key string, opts ...dsync.Option) *dsync.Mutex {
	t.Helper()
	m, err := dsync.NewMutex(b, key, append([]dsync.Option{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMutexHammer: processes' worth of Mutexes, each with its own client and
// backend, take one key in turns. Nobody is ever inside with another, as
// seen in memory and by a counter document updated by read-then-write
// under the lock (an overlap loses an increment); tokens increase in grant
// order.
func TestMutexHammer(t *testing.T) {
	procs, rounds := 8, 200
	if testing.Short() {
		rounds = 50
		t.Logf("-short: %d rounds instead of 200", rounds)
	}
	hammer(t, procs, rounds)
}

// TestMutexHammerWakeups: the same with wake-ups on, where each release
// names the next holder, which inserts before reading (the proof after
// the insert).
func TestMutexHammerWakeups(t *testing.T) {
	procs, rounds := 6, 40
	if testing.Short() {
		rounds = 15
		t.Logf("-short: %d rounds instead of 40", rounds)
	}
	hammer(t, procs, rounds, WithWakeups(true), WithSafetyPoll(2*time.Second))
}

func hammer(t *testing.T, procs, rounds int, opts ...Option) {
	// A process pauses after Unlock, up to a poll interval: otherwise it
	// would relock at once, ahead of the sleeping waiters, and run all its
	// rounds in a row. Waiters poll more often than by default.
	const poll = 100 * time.Millisecond
	ps := newProcs(t, procs, append([]Option{WithPollInterval(poll)}, opts...)...)
	ctx := testCtx(t, 3*time.Minute)

	var (
		inside   atomic.Int32
		mu       sync.Mutex
		tokens   []uint64
		grants   []int // proc of each grant
		failures atomic.Int32
	)
	var errs sync.Map // error text → count, from the Mutexes' error handlers
	onErr := dsync.WithErrorHandler(func(err error) {
		n, _ := errs.LoadOrStore(err.Error(), new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	})
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
		m := newMutex(t, p.b, "hammer", onErr)
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
	errs.Range(func(k, v any) bool {
		t.Logf("backend error reported %d times: %s", v.(*atomic.Int32).Load(), k)
		return true
	})
	t.Logf("%d procs × %d rounds: %v (%v per handoff); commands %v (counter reads/writes included)",
		procs, rounds, took.Round(time.Millisecond), (took / time.Duration(total)).Round(time.Microsecond), cmds)
}

// crashable is a backend whose process can "crash": from then on its
// renewals and releases never reach the server.
type crashable struct {
	dsync.Backend
	crashed atomic.Bool

	mu          sync.Mutex
	lastRenewal time.Time // send time of the last applied renewal
}

var errCrashed = errors.New("process crashed")

func (c *crashable) Renew(ctx context.Context, ttl time.Duration, leases []dsync.Lease) ([]bool, error) {
	if c.crashed.Load() {
		return nil, errCrashed
	}
	sent := time.Now()
	applied, err := c.Backend.Renew(ctx, ttl, leases)
	if err == nil && len(applied) > 0 && applied[0] {
		c.mu.Lock()
		c.lastRenewal = sent
		c.mu.Unlock()
	}
	return applied, err
}

func (c *crashable) Release(ctx context.Context, l dsync.Lease) error {
	if c.crashed.Load() {
		return errCrashed
	}
	return c.Backend.Release(ctx, l)
}

func TestMutexCrashedHolderIsTakenOverAfterTTL(t *testing.T) {
	ps := newProcs(t, 2)
	ctx := testCtx(t, time.Minute)
	const ttl = time.Second
	cb := &crashable{Backend: ps[0].b}
	m1 := newMutex(t, cb, "k", dsync.WithTTL(ttl))
	m2 := newMutex(t, ps[1].b, "k", dsync.WithTTL(ttl))
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
	// The lease ran until TTL after the send of its last write: the
	// acquire, or the renewal (normally one, at TTL/3) before the crash.
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
	if err != nil || info.Owner != m2.Owner() || !info.Live {
		t.Errorf("Current = %+v, %v; want m2's live hold", info, err)
	}
	if err := m2.UnlockContext(ctx); err != nil {
		t.Error(err)
	}
}

// TestMutexSteadyStateCommands counts the commands of Lock+Unlock cycles of
// one uncontended Mutex: an insert and an update, plus pruning.
func TestMutexSteadyStateCommands(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pruneDelay time.Duration
	}{
		{"default prune delay", pruneDelay},
		{"prune delay 0 (every prune due)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// With wake-ups on: they must not add a command to an
			// uncontended cycle.
			p := newProcs(t, 1, WithWakeups(true))[0]
			p.b.cfg.pruneDelay = tc.pruneDelay
			ctx := testCtx(t, 2*time.Minute)
			// A TTL long enough that no renewal falls into the loop.
			m := newMutex(t, p.b, "k", dsync.WithTTL(time.Minute))
			cycles := 320
			cycle := func() {
				if err := m.LockContext(ctx); err != nil {
					t.Fatal(err)
				}
				if err := m.UnlockContext(ctx); err != nil {
					t.Fatal(err)
				}
			}
			cycle() // the first Lock also creates the index and measures the clock
			// ... and starts following wake-up events, which costs a create,
			// an insert and a find, once.
			waitWakeups(t, p.b)
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
			if n["insert"] != cycles || n["update"] != cycles || n["find"] != 0 {
				t.Errorf("commands %v for %d cycles: want one insert and one update per cycle, no reads", n, cycles)
			}
			if d := per("delete"); d > 0.1 {
				t.Errorf("%.3f deletes per cycle, want at most 0.1", d)
			}
		})
	}
}

// TestMutexRenewsManyLocks holds many locks through one backend and checks
// that each renew interval costs one write command covering all of them.
func TestMutexRenewsManyLocks(t *testing.T) {
	n := 1000
	type renewal struct {
		size       int // ids in its $in
		start, end time.Time
	}
	var (
		mu       sync.Mutex
		renewals = map[int64]*renewal{} // by request id
		order    []*renewal
		updates  []time.Time // starts of all update commands
	)
	cmd := &counter{
		onStart: func(e *event.CommandStartedEvent) {
			if e.CommandName != "update" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			updates = append(updates, time.Now())
			in, err := e.Command.LookupErr("updates", "0", "q", "_id", "$in")
			if err != nil {
				return // a release
			}
			vals, _ := in.Array().Values()
			r := &renewal{size: len(vals), start: time.Now()}
			renewals[e.RequestID] = r
			order = append(order, r)
		},
		onSucceeded: func(e *event.CommandSucceededEvent) {
			mu.Lock()
			defer mu.Unlock()
			if r := renewals[e.RequestID]; r != nil {
				r.end = time.Now()
			}
		},
	}
	db := mongotest.NewDatabase(t, cmd.monitor())
	// Crashed at the end: releasing 1,000 locks costs FerretDB half a
	// minute, and is not the subject here.
	b := &crashable{Backend: newBackend(t, db)}
	ctx := testCtx(t, 5*time.Minute)
	const interval = 2 * time.Second
	ms := make([]*dsync.Mutex, n)
	start := time.Now()
	for i := range ms {
		ms[i] = newMutex(t, b, fmt.Sprintf("lock-%04d", i), dsync.WithTTL(time.Minute), dsync.WithRenewInterval(interval))
		if err := ms[i].LockContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lockedAt := time.Now()
	t.Logf("locked %d keys in %v: %v", n, lockedAt.Sub(start).Round(time.Millisecond), cmd.take())

	// Watch two renewals that start after the last lock. (One may have
	// started during the locking; it covers only the locks held then.)
	var after []*renewal
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		after = after[:0]
		for _, r := range order {
			if r.start.After(lockedAt) {
				after = append(after, r)
			}
		}
		mu.Unlock()
		if len(after) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	if len(after) < 2 {
		mu.Unlock()
		t.Fatalf("%d renewals after locking, want 2", len(after))
	}
	first, second := after[0], after[1]
	var between int // update commands from the first renewal until the second
	for _, u := range updates {
		if !u.Before(first.start) && u.Before(second.start) {
			between++
		}
	}
	t.Logf("renewal of %d locks: one update with %d ids, %v; next renewal %v after it started; %d update commands in that interval",
		n, first.size, first.end.Sub(first.start).Round(time.Millisecond),
		second.start.Sub(first.start).Round(time.Millisecond), between)
	if first.size != n || second.size != n {
		t.Errorf("renewals covered %d and %d locks, want all %d in one command", first.size, second.size, n)
	}
	if between != 1 {
		t.Errorf("%d update commands in one renew interval, want 1", between)
	}
	mu.Unlock()
	for i, m := range ms {
		select {
		case <-m.Lost():
			t.Fatalf("lock %d lost", i)
		default:
		}
	}

	// Unlock without releasing: Unlock waits for the renewal in flight,
	// and ends the holds locally whatever the release's outcome.
	b.crashed.Store(true)
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() {
			if err := m.UnlockContext(ctx); !errors.Is(err, errCrashed) {
				t.Errorf("UnlockContext = %v, want the crash", err)
			}
		})
	}
	wg.Wait()
}

func TestMutexUnreachableServer(t *testing.T) {
	b := newBackend(t, offlineDB(t))
	m := newMutex(t, b, "k")
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
