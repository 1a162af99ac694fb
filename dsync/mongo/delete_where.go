package dsyncmongo

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Deleting every document a filter selects (the sweeps' Compact and
// DropGates, and the cleaning of long-expired sessions), however many.
//
// On MongoDB that is one deleteMany. FerretDB answers a deleteMany by
// reading every document the filter selects and then deleting them all
// in one SQL statement that names each _id; SQLite refuses a statement
// with more than 32,766 parameters ("too many SQL variables"), so a
// deleteMany of more documents fails and deletes nothing. A sweep that
// once fell that far behind (keys made faster than it deleted them) never
// caught up: every later one had more to delete. On FerretDB the driver
// therefore reads the _ids the filter selects, deletePass at most at a
// time, and deletes them by _id, deleteBatch to a request; a delete by
// _id is a point delete there, whatever the collection holds.
//
// A delete by _id is right only for documents whose _id, once the filter
// selects them, is never inserted again: a delete that lands late, after
// its sender gave up on it and after its later writes, then deletes that
// document or nothing, as a deleteMany landing then would. The callers
// vouch for it: the old gates of DropGates name buckets long past; of
// Compact's documents, claims, markers and shadows name epochs below
// every token a compacted key takes again, and gates buckets before any
// it covers again (Compact deletes done records, whose ID comes back,
// with a deleteMany); a session document names a generation its owner
// retired long before; a stall record inserted again (a resend landing
// late) carries its old time, which the filter selects again. Those documents are never updated but a session's
// expiry, which a renewal landing late raises no further than its
// sender's deadline, long past.
const (
	deletePass  = 20000
	deleteBatch = 1000
)

// deleteWhere deletes the documents of coll that filter selects, and
// returns how many it deleted: by _id on FerretDB, so filter must select
// only documents whose _id never comes back (see above). op names the
// write for errors and faults.
func (w *writer) deleteWhere(ctx context.Context, coll *mongo.Collection, op string, filter bson.D) (int64, error) {
	if !w.platform.isFerret() {
		return w.deleteMany(ctx, coll, op, filter)
	}
	var total int64
	for {
		ids, err := idsWhere(ctx, coll, filter, deletePass)
		if err != nil {
			w.clock.noteFailure(err)
			return total, err
		}
		var deleted int64
		for chunk := range slices.Chunk(ids, deleteBatch) {
			n, err := w.deleteByID(ctx, coll, op, chunk)
			deleted += n
			if err != nil {
				return total + deleted, err
			}
		}
		total += deleted
		// A pass that found fewer than it may was the last; one that
		// deleted nothing of what it found (others deleted them first)
		// ends too, rather than find them again.
		if len(ids) < deletePass || deleted == 0 {
			return total, nil
		}
	}
}

// deleteByID deletes the documents of coll with these _ids, one delete
// by _id after the other in one request, and returns how many it
// deleted.
func (w *writer) deleteByID(ctx context.Context, coll *mongo.Collection, op string, ids []any) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	models := make([]mongo.WriteModel, len(ids))
	for i, id := range ids {
		models[i] = mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: id}})
	}
	var n int64
	err := w.write(ctx, op, func(ctx context.Context) error {
		r, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(true))
		if r != nil {
			n = r.DeletedCount
		}
		return err
	})
	return n, err
}

// deleteMany deletes the documents of coll that filter selects, in one
// deleteMany, and returns how many it deleted.
func (w *writer) deleteMany(ctx context.Context, coll *mongo.Collection, op string, filter bson.D) (int64, error) {
	var n int64
	err := w.write(ctx, op, func(ctx context.Context) error {
		r, err := coll.DeleteMany(ctx, filter)
		if r != nil {
			n = r.DeletedCount
		}
		return err
	})
	return n, err
}

// idsWhere returns the _ids of up to limit documents of coll that filter
// selects.
func idsWhere(ctx context.Context, coll *mongo.Collection, filter bson.D, limit int) ([]any, error) {
	cur, err := coll.Find(ctx, filter, options.Find().
		SetProjection(bson.D{{Key: "_id", Value: 1}}).
		SetLimit(int64(limit)).
		SetBatchSize(int32(min(limit, 10000))))
	if err != nil {
		return nil, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var ids []any
	for cur.Next(ctx) {
		id, err := cur.Current.LookupErr("_id")
		if err != nil {
			continue
		}
		ids = append(ids, bson.RawValue{Type: id.Type, Value: slices.Clone(id.Value)})
	}
	return ids, cur.Err()
}
