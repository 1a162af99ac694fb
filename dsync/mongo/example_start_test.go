package dsyncmongo_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
)

// This example needs a MongoDB server, so it is compiled but not run.

// A job that runs on one process at a time, and gives the lock up at
// once on Ctrl-C or SIGTERM, so that the next process need not wait out
// the lease.
//
// The README's "Quick start" snippet is this example's imports and body;
// a test in package dsync checks that they stay the same.
func Example_firstLock() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())

	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase)) // "dsync", as the dsync command
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store) // one per process: it keeps the lease of all its locks
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close() // releases what it holds, so others go on at once

	mu, err := dsync.NewMutex(locks, "nightly-billing")
	if err != nil {
		log.Fatal(err)
	}
	if err := mu.LockContext(ctx); err != nil {
		log.Print(err) // ctx ended first (Ctrl-C): context.Cause(ctx)
		return
	}
	defer mu.Unlock()

	bill(ctx, mu.Lost(), mu.Token()) // stops when ctx ends or the lease is lost; the token fences its writes
}

// bill stands for the job: it writes under token until it is done, ctx
// ends or lost closes. The resource refuses a write whose token is below
// the highest it has seen: a holder paused past its lease is refused.
func bill(ctx context.Context, lost <-chan struct{}, token uint64) {
	select {
	case <-ctx.Done():
	case <-lost:
	default:
		_ = token
	}
}
