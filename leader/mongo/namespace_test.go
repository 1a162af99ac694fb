package leadermongo_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// A plain lock and an election in the same database never exclude each
// other, whatever their names: the lock "leader/coll" is not the lease of
// the election "coll", which lives in the elections' own collection.
func TestPlainLockAndElectionOfTheSameNameAreApart(t *testing.T) {
	db := mongotest.NewDatabase(t)
	discard := dsyncmongo.WithLogger(slog.New(slog.DiscardHandler))
	locks, err := dsyncmongo.New(db, discard)
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close()
	elections, err := leadermongo.New(db, leadermongo.WithLockOptions(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer elections.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	mu, err := dsync.NewMutex(locks, leader.LockKey("coll"), dsync.WithTTL(2*time.Second), dsync.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if !mu.TryLock() {
		t.Fatalf("TryLock of the plain lock %q on a fresh database failed", mu.Key())
	}
	defer mu.Unlock()

	e, err := leader.NewElection(elections, "coll", leader.WithTTL(2*time.Second), leader.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if info, err := e.Leader(ctx); !errors.Is(err, leader.ErrNoLeader) {
		t.Fatalf("Leader of election coll while the plain lock %q is held = %+v, %v; want ErrNoLeader", mu.Key(), info, err)
	}
	// Campaign would wait for the plain lock's holder if the two shared a
	// key; give it one TTL of the lock and a margin, no more.
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	lctx, err := e.Campaign(cctx)
	if err != nil {
		t.Fatalf("Campaign for election coll while the plain lock %q is held: %v", mu.Key(), err)
	}
	info, err := e.Leader(ctx)
	if err != nil || info.ID != e.ID() {
		t.Fatalf("Leader = %+v, %v; want this candidate, %s", info, err, e.ID())
	}
	select {
	case <-mu.Lost():
		t.Fatal("the plain lock was lost while the election's leader took office")
	case <-lctx.Done():
		t.Fatalf("leadership ended: %v", context.Cause(lctx))
	default:
	}

	// Where each lives: the lease in the elections' collection, the plain
	// lock in the locks' collection.
	for _, c := range []struct {
		coll  string
		owner string
	}{{dsyncmongo.DefaultCollection, mu.Owner()}, {leadermongo.DefaultCollection, e.ID()}} {
		n, err := db.Collection(c.coll).CountDocuments(ctx, bson.D{{Key: "key", Value: leader.LockKey("coll")}, {Key: "kind", Value: "claim"}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := db.Collection(c.coll).CountDocuments(ctx, bson.D{{Key: "key", Value: leader.LockKey("coll")}, {Key: "kind", Value: "claim"}, {Key: "owner", Value: c.owner}})
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || m != 1 {
			t.Errorf("collection %s holds %d epochs of %q, %d of them owned by %s; want exactly one, that one",
				c.coll, n, leader.LockKey("coll"), m, c.owner)
		}
	}
}

// WithLockOptions(dsyncmongo.WithCollection(...)) moves the leases, for
// instance to share one collection between deployments' elections.
func TestLeaseCollectionIsSettable(t *testing.T) {
	db := mongotest.NewDatabase(t)
	b, err := leadermongo.New(db, leadermongo.WithLockOptions(
		dsyncmongo.WithLogger(slog.New(slog.DiscardHandler)), dsyncmongo.WithCollection("leases")))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	e, err := leader.NewElection(b, "moved", leader.WithTTL(2*time.Second), leader.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	for coll, want := range map[string]int64{"leases": 1, leadermongo.DefaultCollection: 0, dsyncmongo.DefaultCollection: 0} {
		n, err := db.Collection(coll).CountDocuments(ctx, bson.D{{Key: "key", Value: leader.LockKey("moved")}, {Key: "kind", Value: "claim"}})
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("collection %s holds %d epochs of the lease, want %d", coll, n, want)
		}
	}
}
