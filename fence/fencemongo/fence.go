package fencemongo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// FenceField is the field in which a Fenced collection keeps each
// document's fence. Updates and replacements must not set it.
const FenceField = "_dsyncFence"

// A Fenced is a MongoDB collection seen through one hold's fencing token.
// See FenceField and Fence. It is safe for concurrent use.
type Fenced struct {
	coll      *mongo.Collection // with the majority write concern, read on the primary
	token     int64
	nonAtomic bool
}

// A FenceOption configures a Fenced. A nil FenceOption is an error Fence
// returns.
type FenceOption func(*Fenced) error

// WithNonAtomicFence lets Fence work on a server without atomic updates
// (FerretDB), for tests.
//
// Such a server applies updates as a read and a later write. There a
// Fenced rejects a stale holder's write only when the two holders'
// operations on a document do not overlap in time: fine for tests, not a
// guarantee. Fence then asks the server nothing.
func WithNonAtomicFence() FenceOption {
	return func(f *Fenced) error {
		f.nonAtomic = true
		return nil
	}
}

// Fence returns coll seen through token, the fencing token of the
// caller's hold.
//
// Unless WithNonAtomicFence is given, it asks coll's server once per
// driver client whether it is FerretDB (buildInfo). It fails there with
// ErrFenceNotAtomic. An error of that command (an unreachable server) is
// returned, wrapped.
func Fence(ctx context.Context, coll *mongo.Collection, token uint64, opts ...FenceOption) (*Fenced, error) {
	if coll == nil {
		return nil, errors.New("fencemongo: Fence of a nil collection")
	}
	if token == 0 || token > 1<<63-1 {
		return nil, fmt.Errorf("fencemongo: Fence with token %d: a hold's token is at least 1 (is the lock held?)", token)
	}
	f := &Fenced{
		// The caller's collection options (registry, read concern) stay;
		// the write concern is the majority's, and the reads that tell
		// why a command matched nothing see what the commands wrote.
		coll: coll.Clone(options.Collection().SetWriteConcern(writeconcern.Majority()).
			SetReadPreference(readpref.Primary())),
		token: int64(token),
	}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("fencemongo: Fence with a nil option")
		}
		if err := o(f); err != nil {
			return nil, err
		}
	}
	if f.nonAtomic {
		return f, nil
	}
	ferret, err := serverIsFerretDB(ctx, coll.Database())
	if err != nil {
		return nil, fmt.Errorf("fencemongo: Fence: asking the server what it is (buildInfo): %w", err)
	}
	if ferret {
		return nil, ErrFenceNotAtomic
	}
	return f, nil
}

// Token returns the Fenced's token.
func (f *Fenced) Token() uint64 { return uint64(f.token) }

// FindOne decodes the document filter matches into v, raising its fence
// to the Fenced's token.
//
// It fails with ErrFenced if the document's fence is above the token, and
// with mongo.ErrNoDocuments if no document matches. Read through FindOne
// before computing a write from what was read. If filter names one _id
// ({_id: v} or {_id: {$eq: v}}) and finds nothing, the fence stays on that
// _id (in a placeholder if no document has it), so that no holder with a
// lower token can then insert it.
func (f *Fenced) FindOne(ctx context.Context, filter, v any) error {
	var found *mongo.SingleResult
	err := f.fenced(ctx, filter, func(fenced bson.D) (matched int64, err error) {
		res := f.coll.FindOneAndUpdate(ctx, fenced, bson.D{{Key: "$max", Value: bson.D{{Key: FenceField, Value: f.token}}}},
			options.FindOneAndUpdate().SetReturnDocument(options.After))
		switch err := res.Err(); {
		case errors.Is(err, mongo.ErrNoDocuments):
			return 0, nil
		case err != nil:
			return 0, err
		}
		found = res
		return 1, nil
	})
	switch {
	case err != nil:
		return err
	case found == nil:
		return mongo.ErrNoDocuments
	}
	return found.Decode(v)
}

// UpdateOne applies update to the document filter matches, raising its
// fence to the Fenced's token.
//
// update is a document of update operators, such as {$set: ...}. The
// update and the raise are one command that applies
// only while the fence is at most the token. It fails with ErrFenced if
// the document's fence is above the token. If no document matches, it
// returns a result with MatchedCount 0, as the driver does. If filter
// then names one _id, it leaves the fence on it as FindOne does. It does
// not upsert: read with FindOne, then create a missing document with
// InsertOne.
func (f *Fenced) UpdateOne(ctx context.Context, filter, update any) (*mongo.UpdateResult, error) {
	u, err := f.update(update)
	if err != nil {
		return nil, err
	}
	var res *mongo.UpdateResult
	err = f.fenced(ctx, filter, func(fenced bson.D) (n int64, err error) {
		if res, err = f.coll.UpdateOne(ctx, fenced, u); err != nil {
			return 0, err
		}
		return res.MatchedCount, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ReplaceOne replaces the document that filter matches with replacement.
// replacement gets the Fenced's token as its fence, in one command that
// applies only while the fence is at most the token. Errors as
// UpdateOne's.
func (f *Fenced) ReplaceOne(ctx context.Context, filter, replacement any) (*mongo.UpdateResult, error) {
	doc, err := f.withFence(replacement)
	if err != nil {
		return nil, err
	}
	var res *mongo.UpdateResult
	err = f.fenced(ctx, filter, func(fenced bson.D) (n int64, err error) {
		if res, err = f.coll.ReplaceOne(ctx, fenced, doc); err != nil {
			return 0, err
		}
		return res.MatchedCount, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// InsertOne inserts doc fenced with the Fenced's token, unless its _id was
// fenced higher.
//
// It fails with ErrFenced once a holder with a later token has read the _id
// through a filter that names it (even finding nothing), or written or
// deleted its document. That holds however late the insert reaches the
// server. It fails with the server's duplicate key error if a document has
// the _id. A doc without _id gets a new ObjectID, which no one can have
// read.
func (f *Fenced) InsertOne(ctx context.Context, doc any) (*mongo.InsertOneResult, error) {
	d, err := f.withFence(doc)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(d, func(e bson.E) bool { return e.Key == "_id" })
	if i < 0 {
		d = append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, d...)
		i = 0
	}
	idType, idBytes, err := bson.MarshalValue(d[i].Value)
	if err != nil {
		return nil, fmt.Errorf("fencemongo: Fenced: the document's _id: %w", err)
	}
	res, err := f.insert(ctx, bson.RawValue{Type: idType, Value: idBytes}, d)
	if err != nil {
		return nil, err
	}
	return &mongo.InsertOneResult{InsertedID: d[i].Value, Acknowledged: res.Acknowledged}, nil
}

// DeleteOne deletes the document filter matches if its fence is at most the
// Fenced's token. It fails with ErrFenced otherwise. It leaves a
// placeholder with the token as the _id's fence (see AbsentField), so that
// a holder with a lower token cannot insert the document again.
func (f *Fenced) DeleteOne(ctx context.Context, filter any) (*mongo.DeleteResult, error) {
	// A replacement keeps the _id.
	placeholder := bson.D{{Key: AbsentField, Value: true}, {Key: FenceField, Value: f.token}}
	var res *mongo.UpdateResult
	err := f.fenced(ctx, filter, func(fenced bson.D) (n int64, err error) {
		if res, err = f.coll.ReplaceOne(ctx, fenced, placeholder); err != nil {
			return 0, err
		}
		return res.MatchedCount, nil
	})
	if err != nil {
		return nil, err
	}
	return &mongo.DeleteResult{DeletedCount: res.MatchedCount, Acknowledged: res.Acknowledged}, nil
}

// fenced runs op with filter restricted to documents (not placeholders)
// whose fence is at most the token. When op matched nothing and filter
// names one _id, it raises that _id's fence to the token (ErrFenced if it
// is above) and runs op again: no lower token can change the _id from
// then on, so what this second run finds stays true against them. When
// op matched nothing at last, it tells a document fenced off (ErrFenced)
// from none at all (nil: the caller's result says so).
func (f *Fenced) fenced(ctx context.Context, filter any, op func(fenced bson.D) (matched int64, err error)) error {
	fenced, err := f.filter(filter)
	if err != nil {
		return err
	}
	n, err := op(fenced)
	if err != nil || n > 0 {
		return err
	}
	id, byID := idOf(filter)
	if byID {
		if err := f.raise(ctx, id); err != nil {
			return err
		}
		if n, err = op(fenced); err != nil || n > 0 {
			return err
		}
	}
	if err := f.missed(ctx, filter, byID); !errors.Is(err, mongo.ErrNoDocuments) {
		return err
	}
	return nil
}

// missed tells why a fenced operation matched nothing: ErrFenced if a
// document whose fence is above the token matches filter (a placeholder
// too, if filter names its _id: a later holder found it absent), else
// mongo.ErrNoDocuments.
func (f *Fenced) missed(ctx context.Context, filter any, byID bool) error {
	above := bson.A{filter, bson.D{{Key: FenceField, Value: bson.D{{Key: "$gt", Value: f.token}}}}}
	if !byID {
		above = append(above, notPlaceholder)
	}
	err := f.coll.FindOne(ctx, bson.D{{Key: "$and", Value: above}}, options.FindOne().SetProjection(bson.D{{Key: FenceField, Value: 1}})).Err()
	switch {
	case err == nil:
		return fmt.Errorf("%w (token %d)", ErrFenced, f.token)
	case errors.Is(err, mongo.ErrNoDocuments):
		return mongo.ErrNoDocuments
	}
	return err
}
