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
	"github.com/go-dsync/dsync/fence"
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

// A transfer between two accounts under a lock, fenced in a transaction:
// CheckTx, first in the transaction, raises the key's mark to the hold's
// token, and both updates commit with the raise or not at all. A holder
// paused past its lease whose transaction runs after the next holder's
// check is refused with an error matching fence.ErrStale, and the server
// aborts its transaction. It needs a replica set or a sharded cluster.
func ExampleCheckTx() {
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://localhost:27017"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	store, err := dsyncmongo.NewStore(client.Database(dsyncmongo.DefaultDatabase))
	if err != nil {
		log.Fatal(err)
	}
	locks, err := dsync.NewClient(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close()

	ctx := context.Background()
	mu, err := dsync.NewMutex(locks, "accounts")
	if err != nil {
		log.Fatal(err)
	}
	if err := mu.LockContext(ctx); err != nil {
		log.Fatal(err)
	}
	defer mu.Unlock()

	app := client.Database("app")
	marks := app.Collection("dsync_fence") // a document per key: its mark
	accounts := app.Collection("accounts")
	sess, err := client.StartSession()
	if err != nil {
		log.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		// First, before the reads: raise the mark, or be refused.
		if err := fencemongo.CheckTx(ctx, marks, "accounts", mu.Token()); err != nil {
			return nil, err // return it: the server has aborted the transaction
		}
		var alice struct{ Balance int64 }
		if err := accounts.FindOne(ctx, bson.D{{Key: "_id", Value: "alice"}}).Decode(&alice); err != nil {
			return nil, err
		}
		if alice.Balance < 10 {
			return nil, errors.New("alice's balance is below 10")
		}
		if _, err := accounts.UpdateOne(ctx, bson.D{{Key: "_id", Value: "alice"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: -10}}}}); err != nil {
			return nil, err
		}
		_, err := accounts.UpdateOne(ctx, bson.D{{Key: "_id", Value: "bob"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: 10}}}})
		return nil, err
	})
	switch {
	case errors.Is(err, fence.ErrStale):
		fmt.Println("our hold ended; the next holder's work stands")
	case errors.Is(err, fencemongo.ErrNoTransactions):
		fmt.Println(err) // FerretDB (`dsync server`) or a standalone server
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("transferred 10 from alice to bob")
	}
}
