package fencemongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Fences on documents that do not exist: a Fenced keeps the fence of an
// absent _id in a placeholder, a document with only that _id, the fence
// and AbsentField. Without it a read that finds nothing would leave no
// trace, and a stale holder's insert could create the document after a
// later holder was told it did not exist.

// AbsentField marks a placeholder, which holds a fence where no document
// has the _id.
//
// A Fenced keeps a placeholder where a document with that _id does not
// exist. It holds the fence of a later holder that read the _id and found
// nothing, or deleted the document. A Fenced takes it for a missing
// document. A reader of the collection itself should skip it:
// {AbsentField: {$exists: false}}.
const AbsentField = "_dsyncAbsent"

// notPlaceholder is the filter that skips placeholders.
var notPlaceholder = bson.D{{Key: AbsentField, Value: bson.D{{Key: "$exists", Value: false}}}}

// attemptsOnARace bounds how often an upsert is retried when the _id's
// document changed between the upsert's match and its insert (another
// process inserted or replaced it): each retry needs another such change.
const attemptsOnARace = 3

// idOf is the one _id that filter allows ({_id: v} or {_id: {$eq: v}} at
// its top level), and false if it allows more than one.
func idOf(filter any) (bson.RawValue, bool) {
	raw, err := marshalDoc(filter)
	if err != nil {
		return bson.RawValue{}, false
	}
	id, err := raw.LookupErr("_id")
	if err != nil {
		return bson.RawValue{}, false
	}
	doc, ok := id.DocumentOK()
	if !ok {
		return id, true
	}
	elems, err := doc.Elements()
	if err != nil || len(elems) == 0 || len(elems[0].Key()) == 0 || elems[0].Key()[0] != '$' {
		return id, true // a document as the _id itself
	}
	if len(elems) == 1 && elems[0].Key() == "$eq" {
		return elems[0].Value(), true
	}
	return bson.RawValue{}, false
}

// raise raises the fence of _id id to the token, whether a document has
// that _id (its fence is raised) or not (a placeholder is inserted). It
// fails with ErrFenced if the _id's fence is above the token. As every
// fenced command, it is harmless whenever it lands: it only raises.
func (f *Fenced) raise(ctx context.Context, id bson.RawValue) error {
	filter := bson.D{{Key: "_id", Value: id}, f.atMostToken()}
	update := bson.D{
		{Key: "$max", Value: bson.D{{Key: FenceField, Value: f.token}}},
		{Key: "$setOnInsert", Value: bson.D{{Key: AbsentField, Value: true}}},
	}
	for attempt := 1; ; attempt++ {
		_, err := f.coll.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) {
			return err
		}
		// No document with the _id and a fence at most the token
		// matched, and one with the _id refused the insert.
		fence, _, exists, ferr := f.fenceOf(ctx, id)
		switch {
		case ferr != nil:
			return ferr
		case exists && fence > f.token:
			return fmt.Errorf("%w (token %d)", ErrFenced, f.token)
		case !exists:
			return fmt.Errorf("fencemongo: Fenced: a placeholder for _id %v, to keep the fence where no document is: %w "+
				"(a unique index on another field must skip documents without that field: make it sparse, "+
				"or partial on {field: {$exists: true}})", id, err)
		case attempt == attemptsOnARace:
			return err
		}
	}
}

// insert inserts d, a document with its fence and _id id, unless a
// document has that _id: it replaces a placeholder whose fence is at
// most the token, and creates the document where there is none. It fails
// with ErrFenced if the _id's fence is above the token, and with the
// server's duplicate key error if a document has the _id.
func (f *Fenced) insert(ctx context.Context, id bson.RawValue, d bson.D) (*mongo.UpdateResult, error) {
	// Not {AbsentField: true}: an upsert copies the equality conditions
	// of its filter into the document it creates.
	filter := bson.D{
		{Key: "_id", Value: id},
		{Key: AbsentField, Value: bson.D{{Key: "$exists", Value: true}}},
		f.atMostToken(),
	}
	for attempt := 1; ; attempt++ {
		res, err := f.coll.ReplaceOne(ctx, filter, d, options.Replace().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) {
			return res, err
		}
		fence, absent, exists, ferr := f.fenceOf(ctx, id)
		switch {
		case ferr != nil:
			return nil, ferr
		case exists && fence > f.token:
			return nil, fmt.Errorf("%w (token %d)", ErrFenced, f.token)
		case !absent || attempt == attemptsOnARace:
			// A document has the _id (or another unique index refused
			// it): InsertOne's duplicate key error.
			return nil, err
		}
	}
}

// fenceOf reads the fence of _id id, and whether its document is a
// placeholder.
func (f *Fenced) fenceOf(ctx context.Context, id bson.RawValue) (fence int64, absent, exists bool, err error) {
	var d struct {
		Fence  int64 `bson:"_dsyncFence"`
		Absent bool  `bson:"_dsyncAbsent"`
	}
	err = f.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}},
		options.FindOne().SetProjection(bson.D{{Key: FenceField, Value: 1}, {Key: AbsentField, Value: 1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, false, false, nil
	}
	if err != nil {
		return 0, false, false, err
	}
	return d.Fence, d.Absent, true, nil
}
