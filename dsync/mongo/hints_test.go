package dsyncmongo

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// Direct hints (dsync/hint) on the server: processes of their own (a
// client, a store and a dsync.Client each) woken by hints with the
// store's feed off.

// hintSpy is a third process that takes hints and keeps the
// announcements it sees.
type hintSpy struct {
	f       *hint.Feed
	waiting chan driver.Event
}

func (s *hintSpy) Live(uint64)      {}
func (s *hintSpy) Down(error, bool) {}
func (s *hintSpy) Event(e driver.Event) {
	if e.Kind == driver.Waiting {
		select {
		case s.waiting <- e:
		default:
		}
	}
}

// newHintSpy starts a spy on db and waits until its record is stored, so
// that the processes started after it know it.
func newHintSpy(t *testing.T, ctx context.Context, db *mongo.Database) *hintSpy {
	t.Helper()
	st, err := NewStore(db, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f, err := hint.New(st, nil, hint.Config{Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s := &hintSpy{f: f, waiting: make(chan driver.Event, 16)}
	t.Cleanup(f.Follow(s))
	for {
		ps, err := st.Roles().Peers.Peers(ctx, time.Time{})
		if err == nil && slices.ContainsFunc(ps, func(p driver.Peer) bool { return p.ID == f.ID() }) {
			return s
		}
		select {
		case <-ctx.Done():
			t.Fatal("the spy never recorded itself")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// heardFrom waits until the spy has heard f's process say hello: the
// process has ended its first round of records (hint.Feed's keepRecord),
// so a process started after it reads its record.
func (s *hintSpy) heardFrom(t *testing.T, ctx context.Context, f *hint.Feed) {
	t.Helper()
	for !slices.Contains(s.f.Peers(), f.ID()) {
		select {
		case <-ctx.Done():
			t.Fatalf("the process %s never said hello", f.ID())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// hintClient is a process with hints on db, that has taken a lock once
// (which starts its feed) and is known to the spy.
func hintClient(t *testing.T, ctx context.Context, db *mongo.Database, s *hintSpy, opts ...dsync.ClientOption) *dsync.Client {
	t.Helper()
	st, err := NewStore(mongotest.SameDatabase(t, db), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := dsync.NewClient(st, append([]dsync.ClientOption{
		dsync.ClientWithLogger(slog.New(slog.DiscardHandler)), dsync.ClientWithIdleAge(0),
		dsync.ClientWithHints("127.0.0.1:0", ""),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	known := len(s.f.Peers())
	warm := newMutex(t, c, "warm-up")
	if err := warm.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	warm.Unlock()
	for len(s.f.Peers()) <= known {
		select {
		case <-ctx.Done():
			t.Fatal("the process never said hello")
		case <-time.After(5 * time.Millisecond):
		}
	}
	return c
}

// TestHandoffWokenByHintOnTheServer: with the store's feed off and polls
// an hour apart, a release on the server wakes the waiter of another
// process through a hint (without one, it would wait until the holder's
// session could have expired, a minute on).
func TestHandoffWokenByHintOnTheServer(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	db := mongotest.NewDatabase(t)
	s := newHintSpy(t, ctx, db)
	noStoreWake := []dsync.ClientOption{
		dsync.ClientWithWakeups(false), dsync.ClientWithTTL(time.Minute),
		dsync.ClientWithPollInterval(time.Hour), dsync.ClientWithSafetyPoll(time.Hour),
	}
	a := hintClient(t, ctx, db, s, noStoreWake...)
	b := hintClient(t, ctx, db, s, noStoreWake...)
	held, waiter := newMutex(t, a, "k"), newMutex(t, b, "k")
	if err := held.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	var releasing, early atomic.Bool
	locked := make(chan error, 1)
	go func() {
		err := waiter.LockContext(ctx)
		early.Store(err == nil && !releasing.Load())
		locked <- err
	}()
	select {
	case e := <-s.waiting:
		if e.Epoch != held.Token() {
			t.Fatalf("the waiter announced it waits for epoch %d, want the holder's, %d", e.Epoch, held.Token())
		}
	case <-ctx.Done():
		t.Fatal("the waiter never announced that it waits")
	}
	releasing.Store(true)
	held.Unlock()
	if err := <-locked; err != nil {
		t.Fatalf("the waiter was not woken: %v", err)
	}
	if early.Load() {
		t.Fatal("the waiter held the lock before the holder released it")
	}
	if waiter.Token() <= held.Token() {
		t.Errorf("the waiter holds token %d, not above the holder's %d", waiter.Token(), held.Token())
	}
	waiter.Unlock()
}

// BenchmarkHandoffHints measures a handoff between two processes on the
// server (from the holder's Unlock to the waiter's hold), with and
// without hints and the store's feed, and reports its median (p50-ms).
// The waiter is given 20 ms to queue before each release.
func BenchmarkHandoffHints(b *testing.B) {
	for _, m := range []struct {
		name string
		opts []dsync.ClientOption
	}{
		{"feed", []dsync.ClientOption{dsync.ClientWithHints("", "")}},
		{"feed+hints", []dsync.ClientOption{dsync.ClientWithHints("127.0.0.1:0", "")}},
		{"hints", []dsync.ClientOption{dsync.ClientWithWakeups(false), dsync.ClientWithHints("127.0.0.1:0", "")}},
		{"poll", []dsync.ClientOption{dsync.ClientWithWakeups(false), dsync.ClientWithHints("", "")}},
	} {
		b.Run(m.name, func(b *testing.B) {
			ctx := testCtx(b, 10*time.Minute)
			db := mongotest.NewDatabase(b)
			var cs [2]*dsync.Client
			for i := range cs {
				st, err := NewStore(mongotest.SameDatabase(b, db), WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					b.Fatal(err)
				}
				c, err := dsync.NewClient(st, append([]dsync.ClientOption{dsync.ClientWithLogger(slog.New(slog.DiscardHandler)), dsync.ClientWithIdleAge(0)}, m.opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { c.Close() })
				cs[i] = c
			}
			var mus [2]*dsync.Mutex
			for i, c := range cs {
				mu, err := dsync.NewMutex(c, "k", quiet)
				if err != nil {
					b.Fatal(err)
				}
				mus[i] = mu
			}
			if err := mus[0].LockContext(ctx); err != nil {
				b.Fatal(err)
			}
			var took []time.Duration
			var mu sync.Mutex
			b.ResetTimer()
			for i := range b.N {
				holder, next := mus[i%2], mus[(i+1)%2]
				locked := make(chan error, 1)
				go func() {
					err := next.LockContext(ctx)
					locked <- err
				}()
				time.Sleep(20 * time.Millisecond) // let it queue
				start := time.Now()
				holder.Unlock()
				if err := <-locked; err != nil {
					b.Fatal(err)
				}
				mu.Lock()
				took = append(took, time.Since(start))
				mu.Unlock()
			}
			b.StopTimer()
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(took[len(took)*9/10])/1e6, "p90-ms")
			mus[b.N%2].Unlock()
		})
	}
}

// TestPeerRecordsGoWithExpiredSessions: a process's record for hints is
// deleted by the cleaning of sessions long expired, and the hint key,
// which has no expiry, is kept.
func TestPeerRecordsGoWithExpiredSessions(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	db := mongotest.NewDatabase(t)
	st, err := NewStore(db, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Roles().Peers.HintKey(ctx, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	now := st.ServerTime().Earliest
	for id, exp := range map[string]time.Time{"old": now.Add(-sessionRetention - time.Minute), "fresh": now.Add(time.Minute)} {
		if err := st.Roles().Peers.PutPeer(ctx, driver.Peer{ID: id, Addr: "127.0.0.1:1", ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}
	st.sessions.clean(ctx)
	for id, want := range map[string]int64{peerIDPrefix + "old": 0, peerIDPrefix + "fresh": 1, hintKeyID: 1} {
		n, err := st.sessions.coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}})
		if err != nil || n != want {
			t.Errorf("%s: %d documents (%v), want %d", id, n, err, want)
		}
	}
}

// TestStoreFeedPausedWhileHintsReach: with the store's events on and
// hints on, a process that hints reach stops reading the events (its
// tailer closes its cursor: no getMore while it waits), and a waiter
// still holds as the lock is released, woken by a hint.
func TestStoreFeedPausedWhileHintsReach(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 60*time.Second)
	db := mongotest.NewDatabase(t)
	s := newHintSpy(t, ctx, db)
	var cnt counter
	a := hintClient(t, ctx, db, s)
	st, err := NewStore(mongotest.SameDatabase(t, db, cnt.monitor()), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := dsync.NewClient(st, dsync.ClientWithLogger(slog.New(slog.DiscardHandler)), dsync.ClientWithIdleAge(0),
		dsync.ClientWithHints("127.0.0.1:0", ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	held, waiter := newMutex(t, a, "k"), newMutex(t, b, "k")
	if err := held.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- waiter.LockContext(ctx) }()
	paused := func() bool {
		tl := st.feed.follower()
		if tl == nil {
			return false
		}
		tl.pause.mu.Lock()
		defer tl.pause.mu.Unlock()
		// Paused, and the follow that was running has returned (its
		// context released): a follow cut short while it still opened
		// its stream has no cursor yet, but may still be sending.
		return tl.pause.paused && tl.pause.cancel == nil && tl.cursor.Load() == 0
	}
	for !paused() {
		select {
		case <-ctx.Done():
			t.Fatal("the waiter's process never paused its store's feed")
		case <-time.After(5 * time.Millisecond):
		}
	}
	cnt.take()
	time.Sleep(2 * time.Second)
	if n := cnt.take()["getMore"]; n != 0 {
		t.Errorf("a paused feed sent %d getMores in 2 s", n)
	}
	held.Unlock()
	if err := <-locked; err != nil {
		t.Fatalf("the waiter was not woken: %v", err)
	}
	waiter.Unlock()
}
