package dsyncmongo

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// Direct hints by default on a deployment reached over loopback
// (Store.Loopback, dsync.ClientWithHints).

// onLoopback skips the test unless the test server is reached over
// loopback (an external one may not be).
func onLoopback(t *testing.T) {
	t.Helper()
	hosts := options.Client().ApplyURI(mongotest.Shared(t).URI()).Hosts
	for _, h := range hosts {
		host, _, err := net.SplitHostPort(h)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			t.Skipf("the test server is at %v, not on loopback", hosts)
		}
	}
}

// defaultClient is a process on db given no ClientWithHints unless in
// copts, with its store's options sopts, that has taken a lock once
// (which prepares the store; its end starts settling the feed, in the
// background) and has settled its feed. It returns the store and the
// Client's hint transport, nil if it made none.
func defaultClient(t *testing.T, ctx context.Context, db *mongo.Database, sopts []Option, copts ...dsync.ClientOption) (*Store, *dsync.Client, *hint.Feed) {
	t.Helper()
	st, err := NewStore(mongotest.SameDatabase(t, db), append([]Option{WithLogger(slog.New(slog.DiscardHandler))}, sopts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		feeds []*hint.Feed
	)
	settled := make(chan struct{})
	hooked := clienthook.Wrap[driver.Store](st, clienthook.Settings{Hints: func(f *hint.Feed) {
		mu.Lock()
		feeds = append(feeds, f)
		mu.Unlock()
	}, Settled: func() { close(settled) }})
	c, err := dsync.NewClient(hooked, append([]dsync.ClientOption{
		dsync.ClientWithLogger(slog.New(slog.DiscardHandler)), dsync.ClientWithIdleAge(0),
	}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	warm := newMutex(t, c, "warm-up")
	if err := warm.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	warm.Unlock()
	select {
	case <-settled:
	case <-ctx.Done():
		t.Fatal("the Client did not settle its feed after its first claim ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(feeds) > 1 {
		t.Fatalf("the Client made %d hint transports", len(feeds))
	}
	if len(feeds) == 0 {
		return st, c, nil
	}
	return st, c, feeds[0]
}

// TestLoopbackHintsByDefault: on the test server, reached over loopback,
// two Clients given no ClientWithHints take hints: with the store's feed
// off and polls an hour apart, a release wakes the waiter of the other
// process by hint (without one, it would wait until the holder's session
// could have expired, a minute on), as its hint stats show. Not on
// FerretDB on PostgreSQL, which never counts as loopback
// (TestLoopbackFerretDBBackend).
func TestLoopbackHintsByDefault(t *testing.T) {
	onLoopback(t)
	if mongotest.Shared(t).Backend() == mongotest.BackendPostgreSQL {
		t.Skip("FerretDB on PostgreSQL does not count as loopback")
	}
	ctx := testCtx(t, 60*time.Second)
	db := mongotest.NewDatabase(t)
	s := newHintSpy(t, ctx, db)
	noStoreWake := []dsync.ClientOption{
		dsync.ClientWithWakeups(false), dsync.ClientWithTTL(time.Minute),
		dsync.ClientWithPollInterval(time.Hour), dsync.ClientWithSafetyPoll(time.Hour),
	}
	// Each process's first round (its record, then the others') ends in a
	// hello. The waiter's process must have read the holder's record, or
	// its announcement goes to the spy only and the release to nobody (a
	// start-up race that hints leave to polls). On a busy machine that
	// round can outlast the warm-up lock: wait for it, not for a time.
	sa, a, af := defaultClient(t, ctx, db, nil, noStoreWake...)
	if af != nil {
		s.heardFrom(t, ctx, af)
	}
	_, b, bf := defaultClient(t, ctx, db, nil, noStoreWake...)
	if r := sa.Roles().Loopback; r == nil || !r.Loopback(ctx) {
		t.Fatal("a store on the test server, on loopback, does not report loopback")
	}
	if af == nil || bf == nil {
		t.Fatal("a Client on a store reached over loopback made no hint transport")
	}
	s.heardFrom(t, ctx, bf)
	held, waiter := newMutex(t, a, "k"), newMutex(t, b, "k")
	if err := held.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- waiter.LockContext(ctx) }()
	select {
	case e := <-s.waiting:
		if e.Epoch != held.Token() {
			t.Fatalf("the waiter announced it waits for epoch %d, want the holder's, %d", e.Epoch, held.Token())
		}
	case <-ctx.Done():
		t.Fatal("the waiter never announced that it waits")
	}
	held.Unlock()
	if err := <-locked; err != nil {
		t.Fatalf("the waiter was not woken: %v", err)
	}
	waiter.Unlock()
	if st := bf.Stats(); st.Woke == 0 {
		t.Errorf("the waiter's hint stats: %+v, want it woken by a hint", st)
	}
	if st := af.Stats(); st.Sent == 0 || st.Taken == 0 {
		t.Errorf("the holder's hint stats: %+v, want hints sent and taken", st)
	}
}

// TestLoopbackNotElsewhere: a store whose server sees this process come
// from another address than a loopback one does not report loopback, and
// a Client on it given no ClientWithHints takes no hints: it makes no
// transport and records nothing for them; nor on the test server with
// ClientWithHints("", "").
func TestLoopbackNotElsewhere(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	for _, c := range []struct {
		name  string
		sopts []Option
		copts []dsync.ClientOption
	}{
		{"seen from another address", []Option{func(c *config) error { a := "192.0.2.7:40000"; c.tests().seenFrom = &a; return nil }}, nil},
		{"turned off", nil, []dsync.ClientOption{dsync.ClientWithHints("", "")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := mongotest.NewDatabase(t)
			st, _, f := defaultClient(t, ctx, db, c.sopts, c.copts...)
			if f != nil {
				t.Errorf("the Client made a hint transport, at %q", f.Addr())
			}
			if c.sopts != nil && st.Roles().Loopback.Loopback(testCtx(t, time.Minute)) {
				t.Error("a store seen from 192.0.2.7 reports loopback")
			}
			if ps, err := st.Roles().Peers.Peers(ctx, time.Time{}); err != nil || len(ps) != 0 {
				t.Errorf("peers recorded: %v, %v; want none", ps, err)
			}
		})
	}
}

// TestLoopbackWhatCounts: which answers of the servers count as
// loopback: the address a server sees (whatsmyuri), the members of a
// replica set (hello), and a sharded cluster never.
func TestLoopbackWhatCounts(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:5000": true, "127.1.2.3:5000": true, "[::1]:5000": true, "::1:5000": true,
		"192.0.2.7:5000": false, "[2001:db8::1]:5000": false, "localhost:5000": false,
		"anonymous unix socket:27017": false, "": false, "127.0.0.1": false,
	} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
	for _, c := range []struct {
		members []string
		want    bool
	}{
		{[]string{"localhost:27017", "127.0.0.1:27018", "[::1]:27019", "LOCALHOST:1"}, true},
		{[]string{"localhost:27017", "db2.example:27017"}, false},
		{[]string{"127.0.0.1:27017", "192.0.2.8:27017"}, false},
		{[]string{"localhost"}, false},
		{nil, false},
	} {
		if got := loopbackMembers(c.members); got != c.want {
			t.Errorf("loopbackMembers(%v) = %v, want %v", c.members, got, c.want)
		}
	}
	st, err := NewStore(mongotest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.platform.topo = topologySharded
	if got, err := st.platform.detectLoopback(context.Background()); got || err != nil {
		t.Errorf("a sharded cluster counts as loopback: %v, %v", got, err)
	}
}
