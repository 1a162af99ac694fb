package dsyncmongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

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
// sentBefore, less those of the gates of buckets from on.
func (s *lockStore) IdleKeys(ctx context.Context, sentBefore time.Time, from int64, limit int) ([]string, error) {
	recent := s.coll.Distinct(ctx, "key", bson.D{
		{Key: "kind", Value: driver.KindGate},
		{Key: "bucket", Value: bson.D{{Key: "$gte", Value: from}}},
	})
	live := make(map[string]bool)
	var rows []string
	if err := recent.Decode(&rows); err != nil {
		s.noteFailure(err)
		return nil, err
	}
	for _, k := range rows {
		live[k] = true
	}
	old := s.coll.Distinct(ctx, "key", bson.D{
		{Key: "kind", Value: bson.D{{Key: "$ne", Value: driver.KindProtocol}}},
		{Key: "at", Value: bson.D{{Key: "$lt", Value: sentBefore.UTC()}}},
	})
	rows = nil
	if err := old.Decode(&rows); err != nil {
		s.noteFailure(err)
		return nil, err
	}
	var keys []string
	for _, k := range rows {
		if !live[k] && len(keys) < limit {
			keys = append(keys, k)
		}
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
