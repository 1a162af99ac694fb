package leadermongo_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
)

// renewals counts the commands that renew a session: a findAndModify of a
// session document (not the server-time samples' clock document), or the
// insert of a session's next document.
type renewals struct {
	mu sync.Mutex
	n  int
}

func (r *renewals) monitor(sessions string) *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
		if coll != sessions {
			return
		}
		switch e.CommandName {
		case "findAndModify":
			if id, _ := e.Command.Lookup("query", "_id").StringValueOK(); id == "#clock" {
				return
			}
		case "insert":
		default:
			return
		}
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
	}})
}

func (r *renewals) take() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = 0
	return n
}

// TestOneRenewalForLocksAndElections: a process holding three Mutexes,
// leading an Election and waiting for a fourth key, all with one TTL on
// one database, renews its lease with one command per renew
// interval.
func TestOneRenewalForLocksAndElections(t *testing.T) {
	t.Parallel()
	r := &renewals{}
	db := mongotest.NewDatabase(t, r.monitor(dsyncmongo.DefaultCollection+"_sessions"))
	// A TTL shorter than the default, so the intervals counted pass in
	// seconds; long enough that a renewal sent late on a busy machine
	// still falls in its interval (the counting starts half of one in).
	const ttl = 6 * time.Second
	locks := newLocks(t, db, dsync.ClientWithTTL(ttl))
	other := newLocks(t, mongotest.SameDatabase(t, db))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	quiet := clienthook.KeyLogger.(func(*slog.Logger) dsync.Option)(slog.New(slog.DiscardHandler))
	for _, key := range []string{"a", "b", "c"} {
		m, err := dsync.NewMutex(locks.c, key, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		defer m.Unlock()
	}
	e, err := leader.NewElection(locks.c, "e", leader.WithMembers(locks.members), leader.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	held, err := dsync.NewMutex(other.c, "d", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	waiter, err := dsync.NewMutex(locks.c, "d", quiet)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWaiting := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- waiter.LockContext(wctx) }()
	defer func() {
		stopWaiting()
		<-waited
	}()

	interval := ttl / 3      // the default renew interval
	time.Sleep(interval / 2) // everything is set up; the counts start between two renewals
	r.take()
	const intervals = 3
	time.Sleep(intervals * interval)
	// Only this process's commands are counted (the other's client has
	// no monitor).
	if n := r.take(); n != intervals {
		t.Errorf("%d renewal commands in %d renew intervals, want %d: one per interval", n, intervals, intervals)
	}
}
