package dsyncmongo

import (
	"context"
	"maps"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The sweeper's reads and deletes (driver.Store IdleKeys, Compact,
// DropGates). Each is one command over the lock collection: on MongoDB a
// scan of the documents it selects, on FerretDB a decode of every
// document of the collection. Only the sweeper sends them, once per
// bucket of time, and the collection holds only the documents of keys
// used within the idle age, so their cost follows the keys in use, not
// the keys ever used.

// compactBatch bounds the keys of one Compact command (SQLite, under
// FerretDB, limits the variables of one statement).
const compactBatch = 1000

// IdleKeys implements driver.Store: the keys of the documents sent before
// sentBefore, less those of the gates of buckets from on (two finds that
// return only keys).
func (s *lockStore) IdleKeys(ctx context.Context, sentBefore time.Time, from int64, limit int) ([]string, error) {
	recent, err := s.keysOf(ctx, bson.D{
		{Key: "kind", Value: driver.KindGate},
		{Key: "bucket", Value: bson.D{{Key: "$gte", Value: from}}},
	})
	if err != nil {
		return nil, err
	}
	old, err := s.keysOf(ctx, bson.D{
		{Key: "kind", Value: bson.D{{Key: "$ne", Value: driver.KindProtocol}}},
		{Key: "at", Value: bson.D{{Key: "$lt", Value: sentBefore.UTC()}}},
	})
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if !recent[k] && len(keys) < limit {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// keysOf returns the keys of the documents filter selects.
func (s *lockStore) keysOf(ctx context.Context, filter bson.D) (map[string]bool, error) {
	cur, err := s.coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "key", Value: 1}, {Key: "_id", Value: 0}}))
	if err != nil {
		s.noteFailure(err)
		return nil, err
	}
	defer cur.Close(ctx)
	keys := make(map[string]bool)
	for cur.Next(ctx) {
		var d struct {
			Key string `bson:"key"`
		}
		if err := cur.Decode(&d); err != nil {
			return nil, err
		}
		keys[d.Key] = true
	}
	if err := cur.Err(); err != nil {
		s.noteFailure(err)
		return nil, err
	}
	return keys, nil
}

// Compact implements driver.Store: a deleteMany per batch of keys.
func (s *lockStore) Compact(ctx context.Context, keys []string, sentBefore time.Time) error {
	for len(keys) > 0 {
		n := min(len(keys), compactBatch)
		batch := keys[:n]
		keys = keys[n:]
		err := s.write(ctx, "compact", func(ctx context.Context) error {
			_, err := s.coll.DeleteMany(ctx, bson.D{
				{Key: "key", Value: bson.D{{Key: "$in", Value: batch}}},
				{Key: "kind", Value: bson.D{{Key: "$ne", Value: driver.KindProtocol}}},
				{Key: "at", Value: bson.D{{Key: "$lt", Value: sentBefore.UTC()}}},
			})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// DropGates implements driver.Store: one deleteMany.
func (s *lockStore) DropGates(ctx context.Context, below int64) error {
	return s.write(ctx, "drop gates", func(ctx context.Context) error {
		_, err := s.coll.DeleteMany(ctx, bson.D{
			{Key: "kind", Value: driver.KindGate},
			{Key: "bucket", Value: bson.D{{Key: "$lt", Value: below}}},
		})
		return err
	})
}
