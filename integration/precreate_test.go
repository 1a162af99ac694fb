package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
)

// precreate creates, before any worker starts, every collection and index
// the workers write to, so that no two processes create one at once.
//
// Why: the embedded FerretDB stores each collection as a SQLite table and
// keeps a registry of them. When several workers created one collection
// at once on a machine loaded with CPU burners, it lost its registry
// entry while the table stayed: every later write to that collection
// failed ("table ... already exists") and a fault suite's shards went
// unowned for a minute. The library copes with a creation race (a
// duplicate creation is an answer it expects); the store did not. Made
// here once, by one client, the collections already exist when the
// workers start, and what the suites test is the library.
//
// The collections are the stores' defaults, as the workers use them:
// the lock collection and its index, its sessions, keys, records and
// capped events collections, and the members collection of elections and partitions.
// The events collection is created the way the library creates it (capped,
// by a waiter that follows the wake-up feed), so a second client waits for
// a key the first holds until it exists.
func precreate(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	plain := []string{
		dsyncmongo.DefaultCollection,
		dsyncmongo.DefaultCollection + "_sessions",
		dsyncmongo.DefaultCollection + "_keys",
		dsyncmongo.DefaultCollection + "_records",
		leadermongo.DefaultMembersCollection,
	}
	for _, name := range plain {
		if err := db.CreateCollection(ctx, name); err != nil && !namespaceExists(err) {
			t.Fatalf("precreate %s: %v", name, err)
		}
	}

	holder := precreateClient(ctx, t, db)
	waiter := precreateClient(ctx, t, db)
	const key = "precreate"
	held, err := dsync.NewMutex(holder.client, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.LockContext(ctx); err != nil {
		t.Fatalf("precreate: lock: %v", err)
	}
	waiting, err := dsync.NewMutex(waiter.client, key)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- waiting.LockContext(ctx) }()
	events := dsyncmongo.DefaultCollection + "_events"
	for !hasCollection(ctx, t, db, events) {
		select {
		case err := <-got:
			t.Fatalf("precreate: the waiter returned (%v) while the key was held", err)
		case <-ctx.Done():
			t.Fatalf("precreate: %s not created by a waiting client: %v", events, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	held.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("precreate: the waiter's lock: %v", err)
	}
	waiting.Unlock()

	// The members collection's index, made by the members store's first
	// write; the member is deleted again.
	members, err := leadermongo.NewStore(holder.store)
	if err != nil {
		t.Fatal(err)
	}
	if err := members.PutMember(ctx, key, leader.Member{ID: key}); err != nil {
		t.Fatalf("precreate: member: %v", err)
	}
	if err := members.DeleteMember(ctx, key, key); err != nil {
		t.Fatalf("precreate: delete member: %v", err)
	}
	waiter.close(t)
	holder.close(t)
}

// precreateTTL is the TTL of precreate's Clients.
const precreateTTL = ttl

// precreated is a client of precreate's, with its store.
type precreated struct {
	client *dsync.Client
	store  *dsyncmongo.Store
}

func precreateClient(ctx context.Context, t *testing.T, db *mongo.Database) precreated {
	t.Helper()
	store, err := dsyncmongo.NewStore(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Prepare(ctx); err != nil {
		t.Fatalf("precreate: prepare: %v", err)
	}
	// No hints: a hint would wake the waiter without its feed, and the
	// feed's collection is one of those to make. The suite's TTL, not the
	// default 15 s: the sessions of these Clients, which never renew with
	// a record of up-time, are left in the store until they expire, and
	// until then no hold can ride an outage of the store through
	// (cluster.awaitSetupExpired).
	c, err := dsync.NewClient(store, dsync.ClientWithHints("", ""), dsync.ClientWithTTL(precreateTTL))
	if err != nil {
		t.Fatal(err)
	}
	return precreated{client: c, store: store}
}

func (p precreated) close(t *testing.T) {
	t.Helper()
	if err := p.client.Close(); err != nil {
		t.Errorf("precreate: close: %v", err)
	}
}

// hasCollection reports whether db has the collection name.
func hasCollection(ctx context.Context, t *testing.T, db *mongo.Database, name string) bool {
	t.Helper()
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: name}})
	if err != nil {
		t.Fatalf("precreate: list collections: %v", err)
	}
	return slices.Contains(names, name)
}

// namespaceExists reports whether err is the server's answer to creating
// a collection that exists.
func namespaceExists(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == 48 || ce.Name == "NamespaceExists")
}
