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
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
	"github.com/go-dsync/dsync/leader/operator"
)

// A process's plain locks and elections share its Client, its
// collection and its lease, yet never a key: the lock "coll" is not the
// lease of the election "coll", and no plain lock can name a lease.
func TestPlainLockAndElectionOfTheSameNameAreApart(t *testing.T) {
	db := mongotest.NewDatabase(t)
	locks := newLocks(t, db, dsync.ClientWithTTL(10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	quiet := clienthook.KeyLogger.(func(*slog.Logger) dsync.Option)(slog.New(slog.DiscardHandler))
	if _, err := dsync.NewMutex(locks.c, operator.LockKey("coll"), quiet); err == nil {
		t.Fatalf("a plain lock was made on the lease key %q", operator.LockKey("coll"))
	}
	mu, err := dsync.NewMutex(locks.c, "coll", quiet)
	if err != nil {
		t.Fatal(err)
	}
	// A try on a fresh database: only ErrHeld would say the lock is
	// taken; a try that ran out of its bound (2 s) on a busy machine's
	// server is made again.
	for {
		err := mu.TryLockContext(ctx)
		if err == nil {
			break
		}
		if errors.Is(err, dsync.ErrHeld) || ctx.Err() != nil {
			t.Fatalf("TryLock of the plain lock %q on a fresh database: %v", mu.Key(), err)
		}
	}
	defer mu.Unlock()

	e, err := leader.NewElection(locks.c, "coll", leader.WithMembers(locks.members), leader.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if info, err := e.Leader(ctx); !errors.Is(err, leader.ErrNoLeader) {
		t.Fatalf("Leader of election coll while the plain lock %q is held = %+v, %v; want ErrNoLeader", mu.Key(), info, err)
	}
	// Campaign would wait for the plain lock's holder, which renews its
	// hold, for as long as the context lets it if the two shared a key:
	// a bound well past what a campaign takes on a busy machine.
	cctx, ccancel := context.WithTimeout(ctx, time.Minute)
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

	// Both live in the lock collection, under keys of their own.
	for _, c := range []struct {
		key   string
		owner string
	}{{"coll", clienthook.OwnerOf(mu)}, {operator.LockKey("coll"), e.ID()}} {
		n, err := db.Collection(dsyncmongo.DefaultCollection).CountDocuments(ctx, bson.D{{Key: "key", Value: c.key}, {Key: "kind", Value: "claim"}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := db.Collection(dsyncmongo.DefaultCollection).CountDocuments(ctx, bson.D{{Key: "key", Value: c.key}, {Key: "kind", Value: "claim"}, {Key: "owner", Value: c.owner}})
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 || m != 1 {
			t.Errorf("key %q has %d epochs, %d of them owned by %s; want exactly one, that one", c.key, n, m, c.owner)
		}
	}
}

// The leases follow the lock store's collection (WithCollection).
func TestLeasesLiveInTheLockCollection(t *testing.T) {
	db := mongotest.NewDatabase(t)
	b := newElections(t, db, dsyncmongo.WithCollection("leases"), dsync.ClientWithTTL(10*time.Second))
	e, err := leader.NewElection(b.c, "moved", leader.WithMembers(b.members), leader.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	for coll, want := range map[string]int64{"leases": 1, leadermongo.LegacyCollection: 0, dsyncmongo.DefaultCollection: 0} {
		n, err := db.Collection(coll).CountDocuments(ctx, bson.D{{Key: "key", Value: operator.LockKey("moved")}, {Key: "kind", Value: "claim"}})
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("collection %s holds %d epochs of the lease, want %d", coll, n, want)
		}
	}
}
