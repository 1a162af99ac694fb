package fencemongo_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/fence/fencemongo"
)

// The example needs a server, so it is compiled but not run.

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

	counters, err := fencemongo.Fence(ctx, client.Database("app").Collection("counters"), mu.Token())
	if errors.Is(err, fencemongo.ErrFenceNotAtomic) {
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
	case errors.Is(err, fencemongo.ErrFenced):
		fmt.Println("our hold ended; the next holder's work stands")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("visits:", c.N+1)
	}
}
