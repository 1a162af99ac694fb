package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/bench/harness"
)

var _ harness.LatencyProber = (*driver)(nil)

// ProbeLatency measures a ping's round trip, and the delivery of an event
// through a capped collection to a tailable-await cursor of another
// client, set up as dsyncmongo's wake-ups set up theirs (batch size 1 for
// the first batch, which an event already there fills).
func (d *driver) ProbeLatency(ctx context.Context, ns string, n int) (roundTrip, event []float64, err error) {
	var clients [2]*mongo.Client
	for i := range clients {
		if clients[i], err = mongo.Connect(options.Client().ApplyURI(d.uri)); err != nil {
			return nil, nil, err
		}
		defer clients[i].Disconnect(context.WithoutCancel(ctx))
	}
	sender, receiver := clients[0].Database(d.db), clients[1].Database(d.db)
	if roundTrip, err = pings(ctx, sender, n); err != nil {
		return nil, nil, err
	}
	if event, err = eventDeliveries(ctx, sender, receiver, "probe_"+ns, n); err != nil {
		return nil, nil, err
	}
	return roundTrip, event, nil
}

// pings times n pings of db, in ms.
func pings(ctx context.Context, db *mongo.Database, n int) ([]float64, error) {
	var roundTrip []float64
	for range n {
		start := time.Now()
		if err := db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
			return nil, err
		}
		roundTrip = append(roundTrip, ms(time.Since(start)))
	}
	return roundTrip, nil
}

// eventDeliveries times n events inserted by sender into a capped
// collection name (made, and dropped at the end) until receiver's
// tailable cursor returns them, in ms.
func eventDeliveries(ctx context.Context, sender, receiver *mongo.Database, name string, n int) ([]float64, error) {
	if err := sender.CreateCollection(ctx, name, options.CreateCollection().
		SetCapped(true).SetSizeInBytes(1<<20).SetMaxDocuments(1000)); err != nil {
		return nil, err
	}
	defer sender.Collection(name).Drop(context.WithoutCancel(ctx))
	out := sender.Collection(name)
	if _, err := out.InsertOne(ctx, bson.D{{Key: "n", Value: -1}}); err != nil {
		return nil, err
	}
	cur, err := receiver.Collection(name).Find(ctx, bson.D{}, options.Find().
		SetCursorType(options.TailableAwait).SetBatchSize(1).SetMaxAwaitTime(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	if !cur.Next(ctx) {
		return nil, fmt.Errorf("tailable cursor: %v", cur.Err())
	}
	// The receiver always has a getMore waiting, as a tailer has: an event
	// then arrives at a random moment of the server's wait, as a release
	// does, not at the start of a getMore sent after it.
	arrived := make(chan time.Time)
	rctx, stop := context.WithCancel(ctx)
	defer func() { // before the cursor is closed
		stop()
		for range arrived {
		}
	}()
	go func() {
		defer close(arrived)
		for cur.Next(rctx) {
			select {
			case arrived <- time.Now():
			case <-rctx.Done():
				return
			}
		}
	}()
	return sendEvents(ctx, out, cur, arrived, n)
}

// sendEvents inserts n events into out, each at a random moment, and
// times each until cur's reader says it arrived.
func sendEvents(ctx context.Context, out *mongo.Collection, cur *mongo.Cursor, arrived <-chan time.Time, n int) ([]float64, error) {
	var event []float64
	for i := range n {
		time.Sleep(rand.N(30 * time.Millisecond))
		start := time.Now()
		if _, err := out.InsertOne(ctx, bson.D{{Key: "n", Value: i}}); err != nil {
			return nil, err
		}
		at, ok := <-arrived
		if !ok {
			return nil, fmt.Errorf("tailable cursor ended: %v", cur.Err())
		}
		event = append(event, ms(at.Sub(start)))
		// Keep the collection short, as dsyncmongo keeps its events: on
		// FerretDB every wait re-reads all of it.
		if i%16 == 15 {
			if _, err := out.DeleteMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: i}}}}); err != nil {
				return nil, err
			}
		}
	}
	return event, nil
}
