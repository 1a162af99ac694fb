package fencemongo

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// fenceOpts are the options the fence tests need on the test server: on
// FerretDB, fencing works only by consent (WithNonAtomicFence), and the
// tests' operations never overlap, which is when it holds there.
func fenceOpts(t *testing.T) []FenceOption {
	if mongotest.Shared(t).IsFerretDB() {
		return []FenceOption{WithNonAtomicFence()}
	}
	return nil
}

type counterDoc struct {
	ID    string `bson:"_id"`
	N     int    `bson:"n"`
	Fence int64  `bson:"_dsyncFence"`
}

// The trial's lost update, done with a Fenced collection: holder A reads
// the counter under its lock and is paused past its lease; B takes the
// lock, reads (raising the fence) and, before B writes, A's write
// arrives. A's write is refused; B's increment stands.
func TestFencedRefusesAStaleHoldersWrite(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	counters := db.Collection("counters")
	locks := newLocks(t, db)
	if _, err := counters.InsertOne(ctx, bson.D{{Key: "_id", Value: "visits"}, {Key: "n", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	filter := bson.D{{Key: "_id", Value: "visits"}}

	a, _ := dsync.NewMutex(locks, "visits")
	if err := a.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	fa, err := Fence(ctx, counters, a.Token(), fenceOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	var seenA counterDoc
	if err := fa.FindOne(ctx, filter, &seenA); err != nil {
		t.Fatal(err)
	}
	// A is paused here; its hold ends (the lease is lost: released here,
	// which hands the lock on the same way) and B takes the lock.
	if err := a.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	bm, _ := dsync.NewMutex(locks, "visits")
	if err := bm.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer bm.Unlock()
	if bm.Token() <= a.Token() {
		t.Fatalf("B's token %d is not above A's %d", bm.Token(), a.Token())
	}
	fb, err := Fence(ctx, counters, bm.Token(), fenceOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	var seenB counterDoc
	if err := fb.FindOne(ctx, filter, &seenB); err != nil {
		t.Fatal(err)
	}
	if seenB.Fence != int64(bm.Token()) {
		t.Fatalf("B's read left fence %d, want its token %d", seenB.Fence, bm.Token())
	}

	// A wakes and writes what it computed: refused, and nothing changed.
	_, err = fa.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: seenA.N + 1}}}})
	if !errors.Is(err, ErrFenced) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("the stale holder's write: %v, want ErrFenced, which matches fence.ErrStale", err)
	}
	if _, err := fa.ReplaceOne(ctx, filter, bson.D{{Key: "n", Value: 100}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale holder's replace: %v, want ErrFenced", err)
	}
	if _, err := fa.DeleteOne(ctx, filter); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale holder's delete: %v, want ErrFenced", err)
	}
	if err := fa.FindOne(ctx, filter, &seenA); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale holder's read: %v, want ErrFenced", err)
	}

	if _, err := fb.UpdateOne(ctx, filter, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	var got counterDoc
	if err := counters.FindOne(ctx, filter).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.N != 4 || got.Fence != int64(bm.Token()) {
		t.Fatalf("counter %+v, want n 4 (B's increment only) and B's fence %d", got, bm.Token())
	}
}

// Without a fenced read, the same interleaving loses an update: the
// reason FindOne raises the fence. (A plain token check on writes alone
// accepts A's write, since B has not written yet.)
func TestFencedWritesAloneLoseTheUpdate(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	counters := db.Collection("counters")
	if _, err := counters.InsertOne(ctx, bson.D{{Key: "_id", Value: "visits"}, {Key: "n", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	filter := bson.D{{Key: "_id", Value: "visits"}}
	fa, _ := Fence(ctx, counters, 5, fenceOpts(t)...)
	fb, _ := Fence(ctx, counters, 6, fenceOpts(t)...)
	var a, b counterDoc
	if err := counters.FindOne(ctx, filter).Decode(&a); err != nil { // A reads without the fence
		t.Fatal(err)
	}
	if err := counters.FindOne(ctx, filter).Decode(&b); err != nil { // so does B
		t.Fatal(err)
	}
	if _, err := fa.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: a.N + 1}}}}); err != nil {
		t.Fatalf("A's write before any later holder wrote: %v", err)
	}
	if _, err := fb.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: b.N + 1}}}}); err != nil {
		t.Fatal(err)
	}
	var got counterDoc
	if err := counters.FindOne(ctx, filter).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.N != 4 {
		t.Fatalf("n = %d: two increments from 3 should have lost one", got.N)
	}
}

func TestFencedInsertAndMissingDocuments(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	coll := db.Collection("things")
	f, err := Fence(ctx, coll, 7, fenceOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	missing := bson.D{{Key: "_id", Value: "none"}}
	var d counterDoc
	if err := f.FindOne(ctx, missing, &d); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("FindOne of a missing document: %v, want mongo.ErrNoDocuments", err)
	}
	if res, err := f.UpdateOne(ctx, missing, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil || res.MatchedCount != 0 {
		t.Fatalf("UpdateOne of a missing document: %+v, %v", res, err)
	}
	if _, err := f.InsertOne(ctx, counterDoc{ID: "x", N: 1}); err == nil {
		t.Fatal("InsertOne of a document that names the fence field accepted")
	}
	if _, err := f.InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}, {Key: AbsentField, Value: true}}); err == nil || !strings.Contains(err.Error(), "placeholder") {
		t.Fatalf("InsertOne of a document that marks itself a placeholder: %v, want a refusal", err)
	}
	if _, err := f.InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := f.FindOne(ctx, bson.D{{Key: "_id", Value: "x"}}, &d); err != nil || d.Fence != 7 || d.N != 1 {
		t.Fatalf("inserted %+v, %v: want n 1, fence 7", d, err)
	}
	// $max of the caller's is kept beside the fence's.
	if _, err := f.UpdateOne(ctx, bson.D{{Key: "_id", Value: "x"}}, bson.D{{Key: "$max", Value: bson.D{{Key: "n", Value: 9}}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.FindOne(ctx, bson.D{{Key: "_id", Value: "x"}}, &d); err != nil || d.N != 9 || d.Fence != 7 {
		t.Fatalf("after $max: %+v, %v", d, err)
	}
	for _, bad := range []any{
		bson.D{{Key: "n", Value: 1}}, // not an operator
		bson.D{{Key: "$set", Value: bson.D{{Key: FenceField, Value: 1}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: AbsentField, Value: true}}}},
		bson.D{{Key: "$set", Value: 1}},
	} {
		if _, err := f.UpdateOne(ctx, bson.D{{Key: "_id", Value: "x"}}, bad); err == nil || !strings.Contains(err.Error(), "Fenced") {
			t.Errorf("update %v: %v, want a refusal", bad, err)
		}
	}
	if res, err := f.DeleteOne(ctx, bson.D{{Key: "_id", Value: "x"}}); err != nil || res.DeletedCount != 1 {
		t.Fatalf("DeleteOne: %+v, %v", res, err)
	}
}

func TestFenceRejectsBadInput(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	db := offlineDB(t)
	if _, err := Fence(ctx, nil, 1); err == nil {
		t.Error("nil collection accepted")
	}
	if _, err := Fence(ctx, db.Collection("c"), 1, nil); err == nil || !strings.Contains(err.Error(), "nil option") {
		t.Errorf("a nil option: %v, want its refusal", err)
	}
	for _, tok := range []uint64{0, 1 << 63} {
		if _, err := Fence(ctx, db.Collection("c"), tok); err == nil || !strings.Contains(err.Error(), "token") {
			t.Errorf("token %d: %v, want a refusal of the token", tok, err)
		}
	}
	// An unreachable server: Fence cannot tell what it is, and says so.
	if _, err := Fence(ctx, db.Collection("c"), 1); err == nil || errors.Is(err, ErrFenceNotAtomic) || !strings.Contains(err.Error(), "buildInfo") {
		t.Errorf("Fence with the server unreachable: %v, want the server's error", err)
	}
}

// On FerretDB (what `dsync server` runs), which applies an update as a
// read and a later write, Fence itself refuses, with the reason, before
// any read or write: the README's fencing snippet checks that error. It
// asks the server once per driver client. With WithNonAtomicFence it
// accepts, and asks nothing.
func TestFenceRefusesFerretDBAtOnce(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("the test server is MongoDB")
	}
	ctx := testCtx(t, time.Minute)
	var cmds counter
	db := mongotest.NewDatabase(t, cmds.monitor())
	cmds.take()
	f, err := Fence(ctx, db.Collection("c"), 1)
	if !errors.Is(err, ErrFenceNotAtomic) || f != nil {
		t.Fatalf("Fence on FerretDB: %v, %v; want nil and ErrFenceNotAtomic", f, err)
	}
	if !strings.Contains(err.Error(), "FerretDB") {
		t.Errorf("the refusal %q does not name the server", err)
	}
	if _, err := Fence(ctx, db.Collection("d"), 2); !errors.Is(err, ErrFenceNotAtomic) {
		t.Fatalf("the second Fence on FerretDB: %v, want ErrFenceNotAtomic", err)
	}
	if n := cmds.take(); n["buildInfo"] != 1 || len(n) != 1 {
		t.Errorf("two refused Fences sent %v, want one buildInfo and nothing else", n)
	}
	f, err = Fence(ctx, db.Collection("c"), 1, WithNonAtomicFence())
	if err != nil || f == nil {
		t.Fatalf("Fence WithNonAtomicFence on FerretDB: %v, %v", f, err)
	}
	if n := cmds.take(); len(n) != 0 {
		t.Errorf("Fence WithNonAtomicFence sent %v, want nothing", n)
	}
}
