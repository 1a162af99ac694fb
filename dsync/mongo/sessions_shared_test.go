package dsyncmongo

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// heldFinds returns client options whose monitor counts the finds of the
// sessions collection and holds the first of them until release is
// closed; started is closed once it is held.
func heldFinds() (opts *options.ClientOptions, finds *atomic.Int64, started, release chan struct{}) {
	finds = new(atomic.Int64)
	started, release = make(chan struct{}), make(chan struct{})
	opts = options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			if e.CommandName != "find" || e.Command.Lookup("find").StringValue() != "dsync_locks"+sessionsSuffix {
				return
			}
			if finds.Add(1) == 1 {
				close(started)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		},
	})
	return opts, finds, started, release
}

// heldFindsStore returns a prepared Store on a database of its own whose
// finds of the sessions collection heldFinds counts and holds.
func heldFindsStore(ctx context.Context, t *testing.T) (s *Store, finds *atomic.Int64, started, release chan struct{}) {
	opts, finds, started, release := heldFinds()
	s = newBackend(t, mongotest.NewDatabase(t, opts)).s
	if err := s.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	return s, finds, started, release
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// TestSessionReadsAreShared: GetSession calls for one session that ask
// while a read of it is in flight are all answered by one read sent after
// it ends, each with the session; none by the read sent before it asked.
func TestSessionReadsAreShared(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	s, finds, started, release := heldFindsStore(ctx, t)
	exp := s.ServerTime().Latest.Add(time.Minute).Truncate(time.Millisecond)
	if err := s.InsertSession(ctx, driver.Session{ID: "s1", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	get := func(wg *sync.WaitGroup) {
		defer wg.Done()
		if got, found, err := s.GetSession(ctx, "s1"); err != nil || !found || !got.ExpiresAt.Equal(exp) || !got.HasFirst {
			t.Errorf("GetSession(s1) = %+v, found %v, %v; want generation 0 expiring at %v", got, found, err, exp)
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go get(&wg)
	<-started
	const later = 9
	wg.Add(later)
	for range later {
		go get(&wg)
	}
	waitFor(t, "every GetSession call to ask", func() bool { return s.sessions.shared.sessions.Callers("s1") == 1+later })
	close(release)
	wg.Wait()
	if n := finds.Load(); n != 2 {
		t.Errorf("%d finds for %d GetSession calls, %d of them while the first was held; want 2", n, 1+later, later)
	}
}

// TestUptimeReadsAreShared: ReadUptime calls that ask at once share one
// read, and each answers for its own since: a session document without
// the record that expired between the two sinces is unmarked to the call
// with the earlier since only.
func TestUptimeReadsAreShared(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	s, finds, started, release := heldFindsStore(ctx, t)
	now := s.ServerTime().Latest.Truncate(time.Millisecond)
	if err := s.InsertSession(ctx, driver.Session{ID: "s1", ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	read := func(since time.Time, unmarked bool) {
		defer wg.Done()
		if got, err := s.ReadUptime(ctx, since); err != nil || got.Unmarked != unmarked {
			t.Errorf("ReadUptime(since %v) = %+v, %v; want Unmarked %v", since.Sub(now), got, err, unmarked)
		}
	}
	wg.Add(1)
	go read(now, true)
	<-started
	wg.Add(2)
	go read(now, true)
	go read(now.Add(2*time.Minute), false)
	waitFor(t, "every ReadUptime call to ask", func() bool { return s.sessions.shared.uptime.Callers(struct{}{}) == 3 })
	close(release)
	wg.Wait()
	if n := finds.Load(); n != 2 {
		t.Errorf("%d finds for 3 ReadUptime calls, 2 of them while the first was held; want 2", n)
	}
}
