package hint_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/hint"
)

// Clients that wake each other with hints, on the store in memory: the
// store's feed off and polls an hour apart, so that only a hint can wake
// a waiter before the test's deadline.

// counting is a process's store that counts its reads: by ID, of
// sessions, and of runs (a walk reads the claims below it a run at a
// time where the store can).
type counting struct {
	*memory.Store
	reads atomic.Int64
}

func countingOn(mem *memory.Store) *counting {
	c := &counting{}
	c.Store = mem.Process().Intercept(func(_ context.Context, call memory.Call, _ func() error) error {
		if call.Op == "Get" || call.Op == "GetRun" || call.Op == "GetSession" {
			c.reads.Add(1)
		}
		return nil
	})
	return c
}

// spy is a third process that takes hints: it sees the others'
// announcements, and can send them valid hints (as a process with access
// to the store can).
type spy struct {
	f      *hint.Feed
	mu     sync.Mutex
	events []driver.Event
	got    chan struct{}
}

func (s *spy) Live(uint64)      {}
func (s *spy) Down(error, bool) {}
func (s *spy) Event(e driver.Event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	notify(s.got)
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// newSpy starts a spy on store and waits until its record is in the
// store, so that the processes started after it know it.
func newSpy(t *testing.T, store driver.Store) *spy {
	t.Helper()
	f, err := hint.New(store, nil, hint.Config{Listen: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s := &spy{f: f, got: make(chan struct{}, 1)}
	t.Cleanup(f.Follow(s))
	waitUntil(t, func() bool {
		ps, err := store.Roles().Peers.Peers(context.Background(), time.Time{})
		return err == nil && slices.ContainsFunc(ps, func(p driver.Peer) bool { return p.ID == f.ID() })
	})
	return s
}

// waiting waits for an announcement and returns it.
func (s *spy) waiting(t *testing.T) driver.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		for _, e := range s.events {
			if e.Kind == driver.Waiting {
				s.mu.Unlock()
				return e
			}
		}
		s.mu.Unlock()
		select {
		case <-s.got:
		case <-timeout:
			t.Fatal("no process announced that it waits")
		}
	}
}

var quiet = slog.New(slog.DiscardHandler)

// waitUntil is the package's own (feed_test.go).
var waitUntil = hint.WaitUntil

// process is a Client with hints on a store in memory, that has taken
// hints (its first lock) and is known to the spy.
type process struct {
	c     *dsync.Client
	store *counting
}

func newProcess(t *testing.T, store *memory.Store, s *spy, advertise string, opts ...dsync.ClientOption) process {
	t.Helper()
	st := countingOn(store)
	opts = append([]dsync.ClientOption{
		dsync.ClientWithLogger(quiet), dsync.ClientWithIdleAge(0),
		dsync.ClientWithWakeups(false),
		dsync.ClientWithPollInterval(time.Hour), dsync.ClientWithSafetyPoll(time.Hour),
		dsync.ClientWithTTL(time.Minute),
		dsync.ClientWithHints("127.0.0.1:0", advertise),
	}, opts...)
	c, err := dsync.NewClient(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	known := len(s.f.Peers())
	// The first session starts the Client's feed: it listens, records
	// itself and says hello to the processes recorded.
	mu := mutex(t, c, "warm-up")
	if err := mu.LockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := mu.UnlockContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return len(s.f.Peers()) > known })
	return process{c, st}
}

func mutex(t *testing.T, c *dsync.Client, key string) *dsync.Mutex {
	t.Helper()
	mu, err := dsync.NewMutex(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return mu
}

// contention is a hold of a's and a Lock of b's that waits behind it.
type contention struct {
	held, waiter *dsync.Mutex
	releasing    atomic.Bool  // set just before held is unlocked
	locked       chan error   // the waiter's LockContext returned
	early        atomic.Bool  // it returned nil before releasing was set
	announced    driver.Event // what the waiter announced
}

// contend starts a contention, and returns it once the spy has seen the
// waiter announce that it waits.
func contend(t *testing.T, ctx context.Context, a, b process, s *spy) *contention {
	t.Helper()
	c := &contention{held: mutex(t, a.c, "k"), waiter: mutex(t, b.c, "k"), locked: make(chan error, 1)}
	if err := c.held.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := c.waiter.LockContext(ctx)
		if err == nil && !c.releasing.Load() {
			c.early.Store(true)
		}
		c.locked <- err
	}()
	c.announced = s.waiting(t)
	if c.announced.Epoch != c.held.Token() {
		t.Fatalf("the waiter announced it waits for epoch %d, want the holder's, %d", c.announced.Epoch, c.held.Token())
	}
	return c
}

// release unlocks the hold and waits for the waiter's turn.
func (c *contention) release(t *testing.T) {
	t.Helper()
	c.releasing.Store(true)
	c.held.Unlock()
	if err := <-c.locked; err != nil {
		t.Fatalf("the waiter never took its turn: %v", err)
	}
	if c.early.Load() {
		t.Fatal("the waiter held the lock before the holder released it")
	}
	if c.waiter.Token() <= c.held.Token() {
		t.Errorf("the waiter holds token %d, not above the holder's %d", c.waiter.Token(), c.held.Token())
	}
	c.waiter.Unlock()
}

// TestHandoffWokenByHint: with the store's feed off and polls an hour
// apart, a release wakes the waiter of another process (it would
// otherwise wait until the holder's session could have expired, a
// minute).
func TestHandoffWokenByHint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memory.New()
	s := newSpy(t, store)
	a := newProcess(t, store, s, "")
	b := newProcess(t, store, s, "")
	contend(t, ctx, a, b, s).release(t)
}

// TestHintsGrantNothing: a flood of valid hints saying that the claim a
// waiter waits for ended, while it has not, costs the waiter reads at a
// bounded rate, and grants it nothing; it takes its turn after the real
// end (woken by its hint, or by its poll if the flood left no room in
// the rate for it).
func TestHintsGrantNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memory.New()
	s := newSpy(t, store)
	a := newProcess(t, store, s, "")
	const poll = 100 * time.Millisecond
	b := newProcess(t, store, s, "", dsync.ClientWithPollInterval(poll))
	c := contend(t, ctx, a, b, s)
	e := c.announced

	const flood = 5000
	before, start := b.store.reads.Load(), time.Now()
	for range flood {
		if err := s.f.Publish(ctx, driver.Event{Kind: driver.Ended, Key: e.Key, Epoch: e.Epoch, Proc: "spy"}); err != nil {
			t.Fatal(err)
		}
	}
	// The hints were taken: the waiter looked, and still waits.
	waitUntil(t, func() bool { return b.store.reads.Load() > before })
	select {
	case <-c.held.Lost():
		t.Fatal("the holder lost its hold")
	default:
	}
	// Once the waiter holds, it has no waiter left for the claim: hints
	// of the flood it has yet to take cost it nothing.
	c.release(t)
	elapsed := time.Since(start)
	reads := b.store.reads.Load() - before
	// Each hint taken wakes the waiter for one look (a walk of the key's
	// queue: a few reads); hints past the rate are dropped. Its polls
	// look too, and the last look takes the lock.
	const readsPerLook = 4
	looks := hint.DefaultBurst + hint.DefaultRate*elapsed.Seconds() + elapsed.Seconds()/poll.Seconds() + 2
	bound := int64(readsPerLook * looks)
	if reads > bound {
		t.Errorf("%d hints in %v cost the waiter %d reads, want at most %d", flood, elapsed, reads, bound)
	}
	t.Logf("%d hints in %v cost the waiter %d reads (bound %d)", flood, elapsed, reads, bound)
}

// TestHintsLostLeaveThePoll: a process whose hints cannot reach it (it
// advertises an address nobody listens on, as behind a firewall) still
// takes its turn, at its poll.
func TestHintsLostLeaveThePoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := memory.New()
	s := newSpy(t, store)
	a := newProcess(t, store, s, "")
	b := newProcess(t, store, s, "127.0.0.1:9", dsync.ClientWithPollInterval(20*time.Millisecond))
	contend(t, ctx, a, b, s).release(t)
}

// storeOnly hides every role of a store (driver.Roles).
type storeOnly struct{ driver.Store }

func (storeOnly) Roles() driver.Roles { return driver.Roles{} }

// TestClientWithHintsRefuses: NewClient fails with hints on a store that
// cannot record peers, and with an address that is malformed or names no
// host the others could send to.
func TestClientWithHintsRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		store             driver.Store
		listen, advertise string
	}{
		"no peers":               {storeOnly{memory.New()}, "127.0.0.1:0", ""},
		"no port":                {memory.New(), "127.0.0.1", ""},
		"no host to advertise":   {memory.New(), "0.0.0.0:7000", ""},
		"unspecified advertised": {memory.New(), ":7000", "[::]:7000"},
	} {
		if cl, err := dsync.NewClient(c.store, dsync.ClientWithHints(c.listen, c.advertise)); err == nil {
			cl.Close()
			t.Errorf("%s: NewClient accepted hints on %q, advertising %q", name, c.listen, c.advertise)
		}
	}
}
