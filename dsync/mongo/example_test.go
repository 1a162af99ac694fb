package dsyncmongo_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
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
	locks, err := dsync.NewClient(store, dsync.WithTTL(15*time.Second))
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

// Who holds a key: the head of its queue, through the Client.
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

	q, err := locks.Queue(context.Background(), "nightly-billing")
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

// A read-modify-write under a lock, fenced: the read raises the
// document's fence to the hold's token (or leaves it on the _id, if the
// counter does not exist yet), and the write or first insert applies only
// while no later holder has read or written the counter. A holder paused
// past its lease (GC, SIGSTOP) that wakes up and writes is refused with
// ErrFenced instead of overwriting the next holder's work. On FerretDB
// (what `dsync server` runs) Fence refuses at once with
// ErrFenceNotAtomic; the example then falls back to the token alone.
func ExampleFence() {
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
	mu, err := dsync.NewMutex(locks, "visits")
	if err != nil {
		log.Fatal(err)
	}
	if err := mu.LockContext(ctx); err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock()

	counters, err := dsyncmongo.Fence(ctx, client.Database("app").Collection("counters"), mu.Token())
	if errors.Is(err, dsyncmongo.ErrFenceNotAtomic) {
		// FerretDB, e.g. `dsync server`: no fenced documents there. Pass
		// the token to a resource that keeps the highest one it has seen.
		fmt.Printf("%v\nfence with the token instead: %d\n", err, mu.Token())
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	filter := bson.D{{Key: "_id", Value: "visits"}}
	var c struct{ N int }
	err = counters.FindOne(ctx, filter, &c)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		// The first visit. The read left our fence on the _id, so a
		// holder paused since before us cannot create the counter now.
		_, err = counters.InsertOne(ctx, bson.D{{Key: "_id", Value: "visits"}, {Key: "n", Value: 1}})
	case err == nil:
		_, err = counters.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: c.N + 1}}}})
	}
	switch {
	case errors.Is(err, dsyncmongo.ErrFenced):
		fmt.Println("our hold ended; the next holder's work stands")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("visits:", c.N+1)
	}
}
