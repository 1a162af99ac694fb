package leadermongo_test

import (
	"fmt"
	"log/slog"
	"os"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.uber.org/goleak"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// A lproc is one process of a test: its Client over a dsyncmongo store,
// and the member store beside it.
type lproc struct {
	c       *dsync.Client
	store   *dsyncmongo.Store
	members *leadermongo.Store
}

// newElections returns a process on db, closed when the test ends. opts
// are dsyncmongo.Options, dsync.ClientOptions and leadermongo.Options, in
// any order.
func newElections(t *testing.T, db *mongo.Database, opts ...any) *lproc {
	t.Helper()
	var (
		sopts = []dsyncmongo.Option{dsyncmongo.WithLogger(slog.New(slog.DiscardHandler))}
		copts = []dsync.ClientOption{dsync.ClientWithLogger(slog.New(slog.DiscardHandler))}
		mopts []leadermongo.Option
		wrap  func(driver.Store) driver.Store
	)
	for _, o := range opts {
		switch o := o.(type) {
		case dsyncmongo.Option:
			sopts = append(sopts, o)
		case dsync.ClientOption:
			copts = append(copts, o)
		case leadermongo.Option:
			mopts = append(mopts, o)
		case func(driver.Store) driver.Store: // what the Client calls the store through
			wrap = o
		default:
			t.Fatalf("newElections: option of type %T", o)
		}
	}
	store, err := dsyncmongo.NewStore(db, sopts...)
	if err != nil {
		t.Fatal(err)
	}
	var over driver.Store = store
	if wrap != nil {
		over = wrap(store)
	}
	c, err := dsync.NewClient(over, copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	members, err := leadermongo.NewStore(store, mopts...)
	if err != nil {
		t.Fatal(err)
	}
	return &lproc{c: c, store: store, members: members}
}

// newLocks is newElections, for a test that uses the process's locks.
func newLocks(t *testing.T, db *mongo.Database, opts ...any) *lproc {
	t.Helper()
	return newElections(t, db, opts...)
}

// elect returns p's candidate for election name, reporting to p's member
// store.
func elect(t *testing.T, p *lproc, name string, opts ...leader.Option) *leader.Election {
	t.Helper()
	e, err := leader.NewElection(p.c, name, append([]leader.Option{leader.WithMembers(p.members)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runChild(role))
	}
	// The parallel tests wait on terms, TTLs and child processes rather
	// than compute: four at a time.
	mongotest.ParallelAtLeast(4)
	code := mongotest.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// anys returns opts as the options newElections takes.
func anys[T any](opts []T) []any {
	out := make([]any, len(opts))
	for i, o := range opts {
		out[i] = o
	}
	return out
}
