package fencemongo

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

func TestMain(m *testing.M) { mongotest.MainWithLeakCheck(m) }

// testCtx is a context for one test, bounded so a hang fails instead of
// stalling the package.
func testCtx(t testing.TB, d time.Duration) context.Context {
	// Three times d: the bounds only stop a test that waits in vain, and
	// a machine busy at four times its cores slows the server and the
	// processes several-fold.
	ctx, cancel := context.WithTimeout(context.Background(), 3*d)
	t.Cleanup(cancel)
	return ctx
}

// newLocks is a Client whose locks hand out the tokens the tests fence
// with, kept in db as a program keeps them; it is closed when t ends.
func newLocks(t *testing.T, db *mongo.Database) *dsync.Client {
	t.Helper()
	store, err := dsyncmongo.NewStore(db, dsyncmongo.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	locks, err := dsync.NewClient(store, dsync.ClientWithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locks.Close() })
	return locks
}

// quietLogger drops what a test's store and Client log.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// offlineDB is a database on a port where no server listens.
func offlineDB(t *testing.T) *mongo.Database {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1/?connectTimeoutMS=200").
		SetServerSelectionTimeout(300 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c.Database("offline")
}

// counter counts the commands a driver client sends, by command name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) monitor() *options.ClientOptions {
	return options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.n == nil {
				c.n = make(map[string]int)
			}
			c.n[e.CommandName]++
		},
	})
}

// take returns the counts so far and resets them.
func (c *counter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	if n == nil {
		n = map[string]int{}
	}
	return n
}
