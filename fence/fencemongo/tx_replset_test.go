package fencemongo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// The tests of CheckTx in transactions, on a MongoDB replica set or
// sharded cluster (CI's replset and sharded jobs); they skip on the
// other test servers.

const noTxServer = "needs transactions, which a MongoDB replica set or sharded cluster has " +
	"(CI's replset and sharded jobs; here, MONGODB_URI of one, or Docker)"

// txDB is a fresh database on the test server, with the collections
// marks and docs made; it skips t on a server without transactions.
func txDB(t *testing.T) *mongo.Database {
	t.Helper()
	if mongotest.Shared(t).IsFerretDB() {
		t.Skip(noTxServer + ": the test server is FerretDB")
	}
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	hello, err := mongotest.Hello(ctx, db.Client())
	if err != nil {
		t.Fatal(err)
	}
	if hello["setName"] == nil && hello["msg"] != "isdbgrid" {
		t.Skip(noTxServer + ": the test server is a standalone mongod")
	}
	// Made outside the transactions, as a program makes them.
	for _, c := range []string{"marks", "docs"} {
		if err := db.CreateCollection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// inTx runs fn in a transaction of a new session of db's client, through
// WithTransaction, and returns its error and how many times fn ran.
func inTx(ctx context.Context, db *mongo.Database, fn func(ctx context.Context) error) (runs int, err error) {
	sess, err := db.Client().StartSession()
	if err != nil {
		return 0, err
	}
	defer sess.EndSession(context.WithoutCancel(ctx))
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		runs++
		return nil, fn(ctx)
	})
	return runs, err
}

// openTx starts a transaction in a new session of db's client, which
// ends with the test, and returns the ctx of its operations.
func openTx(t *testing.T, ctx context.Context, db *mongo.Database) (context.Context, *mongo.Session) {
	t.Helper()
	sess, err := db.Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	return mongo.NewSessionContext(ctx, sess), sess
}

// markOf reads key's document in marks: its mark and count of checks.
func markOf(t *testing.T, ctx context.Context, marks *mongo.Collection, key string) (mark, checks int64) {
	t.Helper()
	var d struct {
		Mark   int64 `bson:"mark"`
		Checks int64 `bson:"checks"`
	}
	if err := marks.FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Decode(&d); err != nil {
		t.Fatalf("the mark of %q: %v", key, err)
	}
	return d.Mark, d.Checks
}

// transient reports whether err is labelled TransientTransactionError:
// WithTransaction runs the transaction again.
func transient(err error) bool {
	var le mongo.LabeledError
	return errors.As(err, &le) && le.HasErrorLabel("TransientTransactionError")
}

// isStale reports whether err is CheckTx's refusal of token for key,
// with mark.
func isStale(err error, key string, token, mark uint64) bool {
	var se *fence.StaleError
	return errors.Is(err, fence.ErrStale) && errors.As(err, &se) && *se == (fence.StaleError{Key: key, Token: token, Mark: mark})
}

// A check accepts a first token, an equal one and a higher one, raising
// the mark and counting each check; it refuses a lower one with the mark,
// and the refused transaction's writes, before the check too, do not
// commit; WithTransaction does not run it again.
func TestCheckTxAcceptsAndRefuses(t *testing.T) {
	db := txDB(t)
	ctx := testCtx(t, time.Minute)
	marks, docs := db.Collection("marks"), db.Collection("docs")
	write := func(token uint64, id string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if err := CheckTx(ctx, marks, "k", token); err != nil {
				return err
			}
			_, err := docs.InsertOne(ctx, bson.D{{Key: "_id", Value: id}})
			return err
		}
	}
	for i, c := range []struct {
		token uint64
		id    string
	}{{5, "a"}, {5, "b"}, {7, "c"}} {
		if _, err := inTx(ctx, db, write(c.token, c.id)); err != nil {
			t.Fatalf("token %d: %v", c.token, err)
		}
		if mark, checks := markOf(t, ctx, marks, "k"); mark != int64(c.token) || checks != int64(i+1) {
			t.Fatalf("after token %d: mark %d, checks %d; want %d, %d", c.token, mark, checks, c.token, i+1)
		}
	}
	runs, err := inTx(ctx, db, func(ctx context.Context) error {
		if _, err := docs.InsertOne(ctx, bson.D{{Key: "_id", Value: "before"}}); err != nil {
			return err
		}
		return write(6, "d")(ctx)
	})
	if !isStale(err, "k", 6, 7) || runs != 1 {
		t.Fatalf("token 6 after 7: %v after %d runs; want a *fence.StaleError of key k, token 6, mark 7, after one run", err, runs)
	}
	if mark, checks := markOf(t, ctx, marks, "k"); mark != 7 || checks != 3 {
		t.Errorf("after the refusal: mark %d, checks %d; want 7, 3", mark, checks)
	}
	if n, err := docs.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Errorf("%d documents written (%v), want 3: the refused transaction's did not commit", n, err)
	}
}

// A refusal aborts the transaction on the server: a caller that goes on
// writing, and commits, commits nothing.
func TestCheckTxRefusalAbortsTheTransaction(t *testing.T) {
	db := txDB(t)
	ctx := testCtx(t, time.Minute)
	marks, docs := db.Collection("marks"), db.Collection("docs")
	if _, err := inTx(ctx, db, func(ctx context.Context) error { return CheckTx(ctx, marks, "k", 7) }); err != nil {
		t.Fatal(err)
	}
	sc, sess := openTx(t, ctx, db)
	if _, err := docs.InsertOne(sc, bson.D{{Key: "_id", Value: "before"}}); err != nil {
		t.Fatal(err)
	}
	if err := CheckTx(sc, marks, "k", 6); !isStale(err, "k", 6, 7) {
		t.Fatalf("token 6 after 7: %v, want a refusal with mark 7", err)
	}
	if _, err := docs.InsertOne(sc, bson.D{{Key: "_id", Value: "after"}}); err == nil {
		t.Error("a write after the refusal, in its transaction, succeeded")
	}
	if err := sess.CommitTransaction(ctx); err == nil {
		t.Error("the commit of a refused transaction succeeded")
	} else {
		t.Logf("the commit: %v", err)
	}
	if n, err := docs.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Errorf("%d documents written (%v), want none", n, err)
	}
}

// The documents a transaction writes, in several collections, commit
// with its check or not at all: a stale holder's transaction writes none
// of them, the current holder's all.
func TestCheckTxSeveralDocumentsUnderOneCheck(t *testing.T) {
	db := txDB(t)
	ctx := testCtx(t, time.Minute)
	marks, docs, ledger := db.Collection("marks"), db.Collection("docs"), db.Collection("ledger")
	if err := db.CreateCollection(ctx, "ledger"); err != nil {
		t.Fatal(err)
	}
	transfer := func(token uint64, suffix string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if err := CheckTx(ctx, marks, "account", token); err != nil {
				return err
			}
			for _, id := range []string{"from" + suffix, "to" + suffix} {
				if _, err := docs.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "token", Value: int64(token)}}); err != nil {
					return err
				}
			}
			_, err := ledger.InsertOne(ctx, bson.D{{Key: "_id", Value: "entry" + suffix}})
			return err
		}
	}
	if _, err := inTx(ctx, db, transfer(3, "-3")); err != nil {
		t.Fatal(err)
	}
	if _, err := inTx(ctx, db, transfer(2, "-2")); !isStale(err, "account", 2, 3) {
		t.Fatalf("the stale holder's transaction: %v, want a refusal with mark 3", err)
	}
	if _, err := inTx(ctx, db, transfer(3, "-3b")); err != nil {
		t.Fatalf("the holder's second transaction: %v", err)
	}
	for coll, want := range map[*mongo.Collection]int64{docs: 4, ledger: 2} {
		if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != want {
			t.Errorf("%s: %d documents (%v), want %d", coll.Name(), n, err, want)
		}
	}
	if n, err := docs.CountDocuments(ctx, bson.D{{Key: "token", Value: int64(2)}}); err != nil || n != 0 {
		t.Errorf("%d documents of the stale holder (%v), want none", n, err)
	}
}

// A transaction whose snapshot is older than a raise committed since
// cannot pass its check, whatever its token: the server fails its write
// of the key's document with a conflict (labelled
// TransientTransactionError), and the transaction run again decides on
// the raise: it refuses a lower token and accepts a higher one.
func TestCheckTxOldSnapshotConflicts(t *testing.T) {
	db := txDB(t)
	ctx := testCtx(t, time.Minute)
	marks := db.Collection("marks")
	for _, token := range []uint64{5, 7} {
		key := fmt.Sprintf("k%d", token)
		if _, err := inTx(ctx, db, func(ctx context.Context) error { return CheckTx(ctx, marks, key, 4) }); err != nil {
			t.Fatal(err)
		}
		sc, sess := openTx(t, ctx, db)
		// The transaction's snapshot, taken by its first read: mark 4.
		if mark, _ := markOf(t, sc, marks, key); mark != 4 {
			t.Fatalf("the snapshot's mark %d, want 4", mark)
		}
		if _, err := inTx(ctx, db, func(ctx context.Context) error { return CheckTx(ctx, marks, key, 6) }); err != nil {
			t.Fatalf("the raise to 6: %v", err)
		}
		err := CheckTx(sc, marks, key, token)
		if err == nil || !transient(err) {
			t.Errorf("token %d from a snapshot older than the raise to 6: %v, want a conflict labelled TransientTransactionError", token, err)
		}
		_ = sess.AbortTransaction(ctx)

		_, err = inTx(ctx, db, func(ctx context.Context) error { return CheckTx(ctx, marks, key, token) })
		switch {
		case token < 6 && !isStale(err, key, token, 6):
			t.Errorf("token %d run again: %v, want a refusal with mark 6", token, err)
		case token > 6 && err != nil:
			t.Errorf("token %d run again: %v, want it accepted", token, err)
		}
	}
}

// A check under a token equal to the mark writes the key's document too,
// so that another transaction's check of the key conflicts with it while
// it runs, whatever its token: else that one could raise the mark and
// commit, and this one commit its writes after, under the lower token.
func TestCheckTxEqualTokenConflicts(t *testing.T) {
	db := txDB(t)
	ctx := testCtx(t, time.Minute)
	marks := db.Collection("marks")
	if _, err := inTx(ctx, db, func(ctx context.Context) error { return CheckTx(ctx, marks, "k", 5) }); err != nil {
		t.Fatal(err)
	}
	sc1, s1 := openTx(t, ctx, db)
	if err := CheckTx(sc1, marks, "k", 5); err != nil {
		t.Fatalf("token 5 again: %v", err)
	}
	sc2, s2 := openTx(t, ctx, db)
	if err := CheckTx(sc2, marks, "k", 6); err == nil || !transient(err) {
		t.Errorf("token 6 while a check under the equal token 5 runs: %v, want a conflict labelled TransientTransactionError", err)
	}
	_ = s2.AbortTransaction(ctx)
	if err := s1.CommitTransaction(ctx); err != nil {
		t.Fatalf("the commit under token 5: %v", err)
	}
	if _, err := inTx(ctx, db, func(ctx context.Context) error { return CheckTx(ctx, marks, "k", 6) }); err != nil {
		t.Fatalf("token 6 after: %v", err)
	}
	if mark, checks := markOf(t, ctx, marks, "k"); mark != 6 || checks != 3 {
		t.Errorf("mark %d, checks %d; want 6, 3", mark, checks)
	}
}

// Two transactions check one key at once: the second conflicts while the
// first runs, WithTransaction runs it again, and once the first has
// committed it is decided in token order: refused under a lower token,
// accepted under a higher one, and then its write is the last.
func TestCheckTxConcurrentTransactions(t *testing.T) {
	db := txDB(t)
	for _, c := range []struct {
		name          string
		first, second uint64
	}{
		{"the later token first", 6, 5},
		{"the earlier token first", 5, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			marks, docs := db.Collection("marks"), db.Collection("docs")
			key := "k-" + mongotest.DatabaseName(t)
			// The key's document exists, so that both checks update it.
			if _, err := inTx(ctx, db, func(ctx context.Context) error { return CheckTx(ctx, marks, key, 1) }); err != nil {
				t.Fatal(err)
			}
			register := func(ctx context.Context, v uint64) error {
				_, err := docs.UpdateOne(ctx, bson.D{{Key: "_id", Value: key}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: int64(v)}}}},
					options.UpdateOne().SetUpsert(true))
				return err
			}
			checked, tried, firstDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var once sync.Once
			var errFirst error
			go func() {
				defer close(firstDone)
				_, errFirst = inTx(ctx, db, func(ctx context.Context) error {
					if err := CheckTx(ctx, marks, key, c.first); err != nil {
						return err
					}
					once.Do(func() { close(checked) })
					select { // the second's first check returns while this transaction runs
					case <-tried:
					case <-ctx.Done():
						return context.Cause(ctx)
					}
					return register(ctx, c.first)
				})
			}()
			select {
			case <-checked:
			case <-firstDone:
				t.Fatalf("the first transaction: %v", errFirst)
			}
			var firstTry error
			triedYet := false
			runs, errSecond := inTx(ctx, db, func(ctx context.Context) error {
				err := CheckTx(ctx, marks, key, c.second)
				if !triedYet {
					triedYet, firstTry = true, err
					close(tried)
				}
				if err != nil {
					return err
				}
				return register(ctx, c.second)
			})
			<-firstDone
			if errFirst != nil {
				t.Fatalf("the first transaction: %v", errFirst)
			}
			if !transient(firstTry) {
				t.Errorf("the second's check while the first ran: %v, want a conflict labelled TransientTransactionError", firstTry)
			}
			if runs < 2 {
				t.Errorf("the second transaction ran %d times, want it run again after its conflict", runs)
			}
			top := max(c.first, c.second)
			if c.second < c.first {
				if !isStale(errSecond, key, c.second, c.first) {
					t.Errorf("the second, under a lower token: %v, want a refusal with mark %d", errSecond, c.first)
				}
			} else if errSecond != nil {
				t.Errorf("the second, under a higher token: %v, want it accepted", errSecond)
			}
			var reg struct {
				V int64 `bson:"v"`
			}
			if err := docs.FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Decode(&reg); err != nil || reg.V != int64(top) {
				t.Errorf("the register holds %d (%v), want %d, the higher token's write", reg.V, err, top)
			}
			if mark, _ := markOf(t, ctx, marks, key); mark != int64(top) {
				t.Errorf("mark %d, want %d", mark, top)
			}
		})
	}
}
