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

// The sweeper's reads and deletes (driver.Maintainer: RecentKeys, Compact,
// DropGates). Each is one command over the lock collection (on FerretDB,
// a delete is a read and then deletes by _id: deleteWhere): on MongoDB a
// scan of the documents it selects, on FerretDB a decode of every
// document of the collection. Only the sweeper sends them, once per
// bucket of time, and the collection holds only the documents of keys
// used within the idle age, so their cost follows the keys in use, not
// the keys ever used.

// RecentKeys implements driver.Maintainer: the keys of the gates of buckets
// from on (a find that returns only keys).
func (s storeRoles) RecentKeys(ctx context.Context, from int64) ([]string, error) {
	keys, err := s.keysOf(ctx, bson.D{
		{Key: "kind", Value: driver.KindGate},
		{Key: "bucket", Value: bson.D{{Key: "$gte", Value: from}}},
	})
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(keys)), nil
}

// keysOf returns the keys of the documents filter selects.
func (s *Store) keysOf(ctx context.Context, filter bson.D) (map[string]bool, error) {
	cur, err := s.coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "key", Value: 1}, {Key: "_id", Value: 0}}))
	if err != nil {
		s.clock.noteFailure(err)
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
		s.clock.noteFailure(err)
		return nil, err
	}
	return keys, nil
}

// Compact implements driver.Maintainer: one deleteMany, whose filter names
// the keys kept (those in use: few), so that FerretDB decodes the
// collection once however many keys go. On FerretDB it deletes by _id
// (deleteWhere) all but the done records, whose ID comes back when a Do
// after the record's expiry inserts it again: a delete by _id that landed
// late would take that new record, so they go in a deleteMany whose
// filter the server applies when it lands. (FerretDB itself runs that
// deleteMany as a read and then deletes by _id: what remains open is the
// server's own time between the two, not a request's time on the way.)
// The sweep also deletes the session documents long expired and the
// records past their retention (Store.clean).
func (s storeRoles) Compact(ctx context.Context, sentBefore time.Time, keep []string) (int64, error) {
	defer s.clean(ctx)
	if keep == nil {
		keep = []string{}
	}
	before := sentBefore.UTC()
	idle := bson.D{
		{Key: "at", Value: bson.D{{Key: "$lt", Value: before}}},
		{Key: "key", Value: bson.D{{Key: "$nin", Value: keep}}},
	}
	// A done record goes only once its expiry passed too (none: it
	// stays).
	expiredDone := append(idle[:len(idle):len(idle)],
		bson.E{Key: "kind", Value: driver.KindDone},
		bson.E{Key: "exp", Value: bson.D{{Key: "$lt", Value: before}}})
	if !s.platform.isFerret() {
		return s.writer.deleteMany(ctx, s.coll, "compact", append(idle[:len(idle):len(idle)],
			bson.E{Key: "kind", Value: bson.D{{Key: "$ne", Value: driver.KindProtocol}}},
			bson.E{Key: "$or", Value: bson.A{
				bson.D{{Key: "kind", Value: bson.D{{Key: "$ne", Value: driver.KindDone}}}},
				bson.D{{Key: "exp", Value: bson.D{{Key: "$lt", Value: before}}}},
			}}))
	}
	n, err := s.writer.deleteWhere(ctx, s.coll, "compact", append(idle[:len(idle):len(idle)],
		bson.E{Key: "kind", Value: bson.D{{Key: "$nin", Value: bson.A{driver.KindProtocol, driver.KindDone}}}}))
	if err != nil {
		return n, err
	}
	m, err := s.writer.deleteMany(ctx, s.coll, "compact done", expiredDone)
	return n + m, err
}

// DropGates implements driver.Maintainer: one deleteMany (deleteWhere).
func (s storeRoles) DropGates(ctx context.Context, below int64, sentBefore time.Time) error {
	_, err := s.writer.deleteWhere(ctx, s.coll, "drop gates", bson.D{
		{Key: "kind", Value: driver.KindGate},
		{Key: "bucket", Value: bson.D{{Key: "$lt", Value: below}}},
		{Key: "at", Value: bson.D{{Key: "$lt", Value: sentBefore.UTC()}}},
	})
	return err
}
