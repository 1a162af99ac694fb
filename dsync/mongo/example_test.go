package dsyncmongo_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/statuspage"
)

// The examples need a server, so they are compiled but not run.

func Example() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())

	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close() // ends its claims, then closes the store

	mu, err := dsync.NewMutex(locks, "nightly-billing")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := mu.LockContext(ctx); err != nil {
		log.Fatal(err) // context.Cause(ctx), with the last server error if any
	}
	defer mu.Unlock()

	// Pass the token to the resource, which rejects writes with a token
	// smaller than one it has seen.
	fmt.Println("billing run fenced by token", mu.Token())
	select {
	case <-mu.Lost():
		log.Print("lease lost: stop writing")
	default:
	}
}

// The README's "Quick start" snippet is this example's imports and body;
// a test in package dsync checks that they stay the same.
func Example_quickStart() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())

	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store, dsync.ClientWithTTL(15*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close() // ends its claims, then closes the store

	mu, err := dsync.NewMutex(locks, "nightly-billing")
	if err != nil {
		log.Fatal(err)
	}

	mu.Lock() // blocks like sync.Mutex; retries store errors
	defer mu.Unlock()

	for part := range 3 {
		select {
		case <-mu.Lost(): // the lease could not be confirmed in time
			log.Print("lock lost: stop writing")
			return
		default:
		}
		writePart(part, mu.Token()) // the resource rejects stale tokens
	}
}

// writePart stands for the caller's own code: the resource stores the
// token with the data and refuses a write whose token is lower than the
// highest it has seen.
func writePart(part int, token uint64) {
	fmt.Printf("part %d written with token %d\n", part, token)
}

// Who holds a key: the head of its queue, read through a statuspage.Reader.
func ExampleNewStore_queue() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close() // ends its claims, then closes the store

	q, err := statuspage.NewReader(locks).Queue(context.Background(), "nightly-billing")
	switch {
	case err != nil:
		log.Fatal(err)
	case len(q) == 0:
		fmt.Println("free")
	default:
		h := q[0]
		fmt.Printf("held by %s on %s (pid %d), token %d, until %v\n",
			h.Owner, h.Host, h.PID, h.Token, h.ExpiresAt)
	}
}

// The README's "RWMutex, Semaphore, Once" snippet: the three on one
// Client, which gives all of them the process's one lease.
func Example_family() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // dsync.dsync_locks, as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close() // ends its claims, then closes the store
	ctx := context.Background()

	// Migrate once, whichever replica starts first; the others wait here.
	migration, err := dsync.NewOnce(locks, "migrate/2026-03-orders-index")
	if err != nil {
		log.Fatal(err)
	}
	if err := migration.Do(ctx, migrateOrders); err != nil {
		log.Fatal(err)
	}

	// At most 3 transcodes at once across every replica.
	transcoders, err := dsync.NewSemaphore(locks, "transcoders", 3)
	if err != nil {
		log.Fatal(err)
	}
	if err := transcoders.Acquire(ctx, 1); err != nil {
		log.Fatal(err)
	}
	defer transcoders.Release(1)

	// Many readers of the catalog, or one writer.
	catalog, err := dsync.NewRWMutex(locks, "catalog")
	if err != nil {
		log.Fatal(err)
	}
	catalog.RLock()
	defer catalog.RUnlock()
}

// migrateOrders stands for a migration: it passes its token to what it
// writes, so that a run that outlived its lease is rejected.
func migrateOrders(ctx context.Context) error {
	token, _ := dsync.TokenOf(ctx)
	_ = token
	return nil
}
