package fencemongo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// The case: P holds and makes its Fenced view; its hold ends; Q,
// with a later token, reads {_id: "visits"} and finds nothing; P wakes
// and inserts. P's insert is refused, and Q still finds nothing until Q
// inserts.
func TestFencedInsertCannotLandAfterALaterHoldersRead(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	counters := db.Collection("counters")
	locks := newLocks(t, db)
	visits := bson.D{{Key: "_id", Value: "visits"}}

	p, _ := dsync.NewMutex(locks, "visits")
	if err := p.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	fp, err := Fence(ctx, counters, p.Token(), fenceOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	// P is paused here; its hold ends and Q takes the lock.
	if err := p.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	q, _ := dsync.NewMutex(locks, "visits")
	if err := q.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Unlock()
	fq, err := Fence(ctx, counters, q.Token(), fenceOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	var c counterDoc
	if err := fq.FindOne(ctx, visits, &c); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("Q's read of a missing counter: %v, want mongo.ErrNoDocuments", err)
	}

	// P wakes and creates the counter it meant to create.
	if _, err := fp.InsertOne(ctx, bson.D{{Key: "_id", Value: "visits"}, {Key: "n", Value: 1}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale holder's insert after Q's read: %v, want ErrFenced", err)
	}
	if err := fq.FindOne(ctx, visits, &c); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("Q's second read: %+v, %v; want mongo.ErrNoDocuments (P's insert must not have landed)", c, err)
	}
	// A stale read of the missing counter learns it is fenced out too.
	if err := fp.FindOne(ctx, visits, &c); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale holder's read of the fenced absence: %v, want ErrFenced", err)
	}

	if res, err := fq.InsertOne(ctx, bson.D{{Key: "_id", Value: "visits"}, {Key: "n", Value: 7}}); err != nil || res.InsertedID != "visits" {
		t.Fatalf("Q's insert: %+v, %v", res, err)
	}
	if err := fq.FindOne(ctx, visits, &c); err != nil || c.N != 7 || c.Fence != int64(q.Token()) {
		t.Fatalf("after Q's insert: %+v, %v; want n 7, fence %d", c, err, q.Token())
	}
	// InsertOne keeps its duplicate-key answer for a document that
	// exists, and a stale insert of it is fenced.
	if _, err := fq.InsertOne(ctx, bson.D{{Key: "_id", Value: "visits"}, {Key: "n", Value: 8}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("Q's second insert of the same _id: %v, want a duplicate key error", err)
	}
	if _, err := fp.InsertOne(ctx, bson.D{{Key: "_id", Value: "visits"}, {Key: "n", Value: 1}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale holder's insert of Q's document: %v, want ErrFenced", err)
	}
	var raw counterDoc
	if err := counters.FindOne(ctx, visits).Decode(&raw); err != nil || raw.N != 7 {
		t.Fatalf("stored %+v, %v; want Q's n 7", raw, err)
	}
}

// Every fenced access by _id that finds nothing fences that _id: a read
// whose other conditions fail, an update or a delete that matches
// nothing. A stale insert after any of them is refused, however late it
// arrives.
func TestFencedMissesByIDFenceTheID(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	coll := mongotest.NewDatabase(t).Collection("things")
	stale, _ := Fence(ctx, coll, 5, fenceOpts(t)...)
	later, _ := Fence(ctx, coll, 6, fenceOpts(t)...)
	var d counterDoc
	misses := map[string]func(id string) error{
		"FindOne with another condition": func(id string) error {
			err := later.FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 3}}, &d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			return err
		},
		"FindOne with $eq": func(id string) error {
			err := later.FindOne(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: id}}}}, &d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			return err
		},
		"UpdateOne": func(id string) error {
			res, err := later.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}})
			if err == nil && res.MatchedCount != 0 {
				return errors.New("matched a missing document")
			}
			return err
		},
		"ReplaceOne": func(id string) error {
			res, err := later.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "n", Value: 1}})
			if err == nil && res.MatchedCount != 0 {
				return errors.New("matched a missing document")
			}
			return err
		},
		"DeleteOne": func(id string) error {
			res, err := later.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
			if err == nil && res.DeletedCount != 0 {
				return errors.New("deleted a missing document")
			}
			return err
		},
	}
	for name, miss := range misses {
		t.Run(name, func(t *testing.T) {
			id := name
			if err := miss(id); err != nil {
				t.Fatalf("the later holder's miss: %v", err)
			}
			if _, err := stale.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 3}}); !errors.Is(err, ErrFenced) {
				t.Fatalf("a stale insert after it: %v, want ErrFenced", err)
			}
			if err := later.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, &d); !errors.Is(err, mongo.ErrNoDocuments) {
				t.Fatalf("the later holder's read: %+v, %v; want mongo.ErrNoDocuments", d, err)
			}
		})
	}
}

// DeleteOne leaves the document's fence behind, in a placeholder that
// fenced reads and writes take for a missing document: a stale holder
// cannot create the document again, a later one can.
func TestFencedDeleteKeepsTheFence(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	coll := mongotest.NewDatabase(t).Collection("things")
	stale, _ := Fence(ctx, coll, 5, fenceOpts(t)...)
	f, _ := Fence(ctx, coll, 6, fenceOpts(t)...)
	later, _ := Fence(ctx, coll, 7, fenceOpts(t)...)
	x := bson.D{{Key: "_id", Value: "x"}}
	if _, err := f.InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if res, err := f.DeleteOne(ctx, bson.D{{Key: "n", Value: 1}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("DeleteOne by another field: %+v, %v", res, err)
	}
	var d counterDoc
	if err := f.FindOne(ctx, x, &d); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("a read after the delete: %+v, %v; want mongo.ErrNoDocuments", d, err)
	}
	if res, err := f.UpdateOne(ctx, x, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 2}}}}); err != nil || res.MatchedCount != 0 {
		t.Fatalf("an update after the delete: %+v, %v; want nothing matched", res, err)
	}
	if res, err := f.DeleteOne(ctx, x); err != nil || res.DeletedCount != 0 {
		t.Fatalf("a second delete: %+v, %v; want nothing deleted", res, err)
	}
	if _, err := stale.InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}, {Key: "n", Value: 9}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("a stale insert after the delete: %v, want ErrFenced", err)
	}
	if _, err := stale.UpdateOne(ctx, x, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 9}}}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("a stale update after the delete: %v, want ErrFenced", err)
	}
	// What an unfenced reader sees: the placeholder, marked.
	var raw bson.M
	if err := coll.FindOne(ctx, x).Decode(&raw); err != nil || raw[AbsentField] != true || raw[FenceField] != int64(6) || len(raw) != 3 {
		t.Fatalf("the placeholder: %v, %v; want _id, %s true and %s 6 only", raw, err, AbsentField, FenceField)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: AbsentField, Value: bson.D{{Key: "$exists", Value: false}}}}); err != nil || n != 0 {
		t.Fatalf("documents that are not placeholders: %d, %v; want 0", n, err)
	}
	if _, err := later.InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}, {Key: "n", Value: 3}}); err != nil {
		t.Fatalf("a later holder's insert over the placeholder: %v", err)
	}
	if err := later.FindOne(ctx, x, &d); err != nil || d.N != 3 || d.Fence != 7 {
		t.Fatalf("after the later insert: %+v, %v; want n 3, fence 7", d, err)
	}
}

// What a fence on an absent _id cannot cover, as the docs say: a read by
// a filter that names no single _id leaves no fence (there is no _id to
// keep it on), and an insert without _id gets a new one, which no one
// can have read.
func TestFencedMissWithoutAnIDLeavesNoFence(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	coll := mongotest.NewDatabase(t).Collection("things")
	stale, _ := Fence(ctx, coll, 5, fenceOpts(t)...)
	later, _ := Fence(ctx, coll, 6, fenceOpts(t)...)
	byName := bson.D{{Key: "name", Value: "a"}}
	var d bson.M
	if err := later.FindOne(ctx, byName, &d); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("a read by name: %v", err)
	}
	res, err := stale.InsertOne(ctx, byName)
	if err != nil {
		t.Fatalf("a stale insert by name, after a read by name: %v (no fence is promised)", err)
	}
	if _, ok := res.InsertedID.(bson.ObjectID); !ok {
		t.Fatalf("InsertedID %#v, want a new ObjectID", res.InsertedID)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: res.InsertedID}}).Decode(&d); err != nil || d["name"] != "a" || d[FenceField] != int64(5) {
		t.Fatalf("inserted %v, %v", d, err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("%d documents, %v: a read by name must leave no placeholder", n, err)
	}
}

// A placeholder has only _id and the fence: a unique index on another
// field must skip it (sparse, or partial on that field existing), or the
// second placeholder collides with the first; Fenced says so.
func TestFencedPlaceholdersAndUniqueIndexes(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	coll := mongotest.NewDatabase(t).Collection("users")
	stale, _ := Fence(ctx, coll, 4, fenceOpts(t)...)
	f, _ := Fence(ctx, coll, 5, fenceOpts(t)...)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true),
	}); err != nil {
		t.Fatal(err)
	}
	var d bson.M
	for _, id := range []string{"a", "b"} {
		if err := f.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, &d); !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatalf("read of missing %s under a sparse unique index: %v", id, err)
		}
		if _, err := stale.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "email", Value: id + "@example.com"}}); !errors.Is(err, ErrFenced) {
			t.Fatalf("a stale insert of %s after the read: %v, want ErrFenced", id, err)
		}
	}
	if _, err := f.InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "email", Value: "x@example.com"}}); err != nil {
		t.Fatal(err)
	}
	// Over b's placeholder: a replacement, which FerretDB refuses with an
	// internal error instead of the duplicate key error.
	_, err := f.InsertOne(ctx, bson.D{{Key: "_id", Value: "b"}, {Key: "email", Value: "x@example.com"}})
	if err == nil || errors.Is(err, ErrFenced) || (!mongotest.Shared(t).IsFerretDB() && !mongo.IsDuplicateKeyError(err)) {
		t.Fatalf("an insert that breaks the unique index: %v, want a duplicate key error", err)
	}
	if err := f.FindOne(ctx, bson.D{{Key: "_id", Value: "b"}}, &d); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("b after the refused insert: %v, %v; want mongo.ErrNoDocuments", d, err)
	}

	if mongotest.Shared(t).IsFerretDB() {
		return // its unique indexes (SQLite's) skip a missing field, as a sparse one does
	}
	dense := mongotest.NewDatabase(t).Collection("users")
	fd, _ := Fence(ctx, dense, 5, fenceOpts(t)...)
	if _, err := dense.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true),
	}); err != nil {
		t.Fatal(err)
	}
	if err := fd.FindOne(ctx, bson.D{{Key: "_id", Value: "a"}}, &d); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatal(err)
	}
	err = fd.FindOne(ctx, bson.D{{Key: "_id", Value: "b"}}, &d)
	if !mongo.IsDuplicateKeyError(err) || errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "sparse") {
		t.Fatalf("a second placeholder under a unique index that does not skip it: %v, want the duplicate key error and what to change", err)
	}
}

// ErrFenced after a raise, as ErrFenced's documentation says: a DeleteOne
// by _id of an absent document (token 5) finds nothing, raises the _id's
// fence to 5, and is held back before its second try; meanwhile a
// holder of token 3 is refused by that raise, and one of token 9 raises
// the fence above it. The DeleteOne then fails with ErrFenced, having
// raised the fence on its way and deleted nothing.
func TestFencedErrFencedAfterItsOwnRaise(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	type heldKey struct{}
	raised, resume := make(chan struct{}), make(chan struct{})
	sent := 0
	db := mongotest.NewDatabase(t, options.Client().SetMonitor(&event.CommandMonitor{
		Started: func(ctx context.Context, _ *event.CommandStartedEvent) {
			if ctx.Value(heldKey{}) == nil {
				return
			}
			// The DeleteOne's requests: its fenced replace, the raise,
			// its second try.
			if sent++; sent == 3 {
				close(raised)
				<-resume
			}
		},
	}))
	coll := db.Collection("things")
	x := bson.D{{Key: "_id", Value: "x"}}
	f5, _ := Fence(ctx, coll, 5, fenceOpts(t)...)
	f3, _ := Fence(ctx, coll, 3, fenceOpts(t)...)
	f9, _ := Fence(ctx, coll, 9, fenceOpts(t)...)

	deleted := make(chan error, 1)
	go func() {
		_, err := f5.DeleteOne(context.WithValue(ctx, heldKey{}, true), x)
		deleted <- err
	}()
	select {
	case <-raised:
	case err := <-deleted:
		t.Fatalf("the DeleteOne returned %v before its second try", err)
	}
	var d counterDoc
	if err := f3.FindOne(ctx, x, &d); !errors.Is(err, ErrFenced) {
		t.Fatalf("token 3's read after token 5's raise: %v, want ErrFenced", err)
	}
	if err := f9.FindOne(ctx, x, &d); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("token 9's read: %v, want mongo.ErrNoDocuments", err)
	}
	close(resume)
	if err := <-deleted; !errors.Is(err, ErrFenced) {
		t.Fatalf("token 5's DeleteOne: %v, want ErrFenced", err)
	}
	var raw bson.M
	if err := coll.FindOne(ctx, x).Decode(&raw); err != nil || raw[AbsentField] != true || raw[FenceField] != int64(9) {
		t.Fatalf("the _id's placeholder: %v, %v; want fence 9", raw, err)
	}
}
