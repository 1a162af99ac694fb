package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/go-dsync/dsync/bench/harness"
)

var _ harness.CommitProber = (*driver)(nil)

// ProbeCommits measures the floor of the store: conns clients of one
// connection each (as conns processes) insert one document at a time
// into the collection "floor_"+ns, with dsyncmongo's default write
// concern (majority), from a common start for dur. The collection is made
// (and a first document inserted through each client, not counted)
// before the start, and dropped at the end.
func (d *driver) ProbeCommits(ctx context.Context, ns string, conns int, dur time.Duration) (int, []float64, error) {
	colls := make([]*mongo.Collection, conns)
	for i := range colls {
		c, err := mongo.Connect(options.Client().ApplyURI(d.uri).SetMaxPoolSize(1))
		if err != nil {
			return 0, nil, err
		}
		defer c.Disconnect(context.WithoutCancel(ctx))
		colls[i] = c.Database(d.db).Collection("floor_"+ns, options.Collection().SetWriteConcern(writeconcern.Majority()))
	}
	defer colls[0].Drop(context.WithoutCancel(ctx))
	for i, c := range colls {
		if _, err := c.InsertOne(ctx, floorDoc(i, -1)); err != nil {
			return 0, nil, fmt.Errorf("warm-up insert: %w", err)
		}
	}
	start := time.Now().Add(50 * time.Millisecond)
	until := start.Add(dur)
	var (
		mu   sync.Mutex
		lat  []float64
		n    int
		errs []error
		wg   sync.WaitGroup
	)
	for i, c := range colls {
		wg.Go(func() {
			time.Sleep(time.Until(start))
			var mine []float64
			for seq := 0; time.Now().Before(until); seq++ {
				a := time.Now()
				if _, err := c.InsertOne(ctx, floorDoc(i, seq)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if done := time.Now(); !done.After(until) {
					mine = append(mine, ms(done.Sub(a)))
				}
			}
			mu.Lock()
			lat, n = append(lat, mine...), n+len(mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, nil, errors.Join(errs...)
	}
	return n, lat, nil
}

// floorDoc is the seq-th document of connection conn: about the size of
// a claim (an _id naming a key and an epoch, a session, a nonce, a mode,
// a time).
func floorDoc(conn, seq int) bson.D {
	return bson.D{
		{Key: "_id", Value: fmt.Sprintf("k%d@%d", conn, seq)},
		{Key: "s", Value: bson.NewObjectID()},
		{Key: "n", Value: rand.Int64()},
		{Key: "m", Value: int32(1)},
		{Key: "t", Value: bson.NewDateTimeFromTime(time.Now())},
	}
}
