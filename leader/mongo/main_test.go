package leadermongo_test

import (
	"fmt"
	"log/slog"
	"os"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.uber.org/goleak"

	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/mongotest"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// newElections returns an election backend on a locks backend of its own
// on db, closed when the test ends.
func newElections(t *testing.T, db *mongo.Database, lockOpts ...dsyncmongo.Option) *leadermongo.Backend {
	t.Helper()
	locks := newLocks(t, db, lockOpts...)
	b, err := leadermongo.New(locks)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newLocks returns a locks backend on db, closed when the test ends.
func newLocks(t *testing.T, db *mongo.Database, opts ...dsyncmongo.Option) *dsyncmongo.Backend {
	t.Helper()
	locks, err := dsyncmongo.New(db, append([]dsyncmongo.Option{dsyncmongo.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = locks.Close() })
	return locks
}

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := mongotest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
