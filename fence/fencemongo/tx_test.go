package fencemongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// The tests of CheckTx that need no transaction: its refusals before any
// I/O, and on servers without transactions. tx_replset_test.go has those
// that run transactions.

// A bad key or token, a nil collection, and a ctx without a transaction
// running in a session of the collection's client are refused before
// anything is sent.
func TestCheckTxRefusesBeforeIO(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	var cmds counter
	db := mongotest.NewDatabase(t, cmds.monitor())
	marks := db.Collection("marks")
	sess, err := db.Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	other, err := mongotest.SameDatabase(t, db).Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer other.EndSession(ctx)
	if err := other.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	cmds.take()

	for _, c := range []struct {
		name  string
		ctx   context.Context
		marks *mongo.Collection
		key   string
		token uint64
		want  error
	}{
		{"empty key", ctx, marks, "", 1, fence.ErrBadKey},
		{"long key", ctx, marks, strings.Repeat("k", fence.MaxKeyLen+1), 1, fence.ErrBadKey},
		{"token 0", ctx, marks, "k", 0, fence.ErrBadToken},
		{"token above MaxToken", ctx, marks, "k", fence.MaxToken + 1, fence.ErrBadToken},
		{"no session", ctx, marks, "k", 1, ErrNotInTransaction},
		{"no transaction", mongo.NewSessionContext(ctx, sess), marks, "k", 1, ErrNotInTransaction},
		{"another client's session", mongo.NewSessionContext(ctx, other), marks, "k", 1, ErrNotInTransaction},
	} {
		if err := CheckTx(c.ctx, c.marks, c.key, c.token); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if err := CheckTx(ctx, nil, "k", 1); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("a nil collection: %v", err)
	}
	if n := cmds.take(); len(n) != 0 {
		t.Errorf("the refusals sent %v, want nothing", n)
	}
}

// On FerretDB (what `dsync server` runs), which has no transactions,
// CheckTx refuses at once, saying why: one buildInfo per driver client,
// outside the transaction, and no write.
func TestCheckTxRefusesFerretDBAtOnce(t *testing.T) {
	if !mongotest.Shared(t).IsFerretDB() {
		t.Skip("the test server is MongoDB")
	}
	ctx := testCtx(t, time.Minute)
	var cmds counter
	db := mongotest.NewDatabase(t, cmds.monitor())
	marks := db.Collection("marks")
	sess, err := db.Client().StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	cmds.take()
	for range 2 {
		calls := 0
		_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
			calls++
			return nil, CheckTx(ctx, marks, "k", 1)
		})
		if !errors.Is(err, ErrNoTransactions) || errors.Is(err, fence.ErrStale) {
			t.Fatalf("CheckTx on FerretDB: %v, want ErrNoTransactions", err)
		}
		if !strings.Contains(err.Error(), "FerretDB") {
			t.Errorf("the refusal %q does not name the server", err)
		}
		if calls != 1 {
			t.Errorf("WithTransaction ran the callback %d times, want once", calls)
		}
	}
	if n := cmds.take(); n["buildInfo"] != 1 || len(n) != 1 {
		t.Errorf("two refusals sent %v, want one buildInfo and nothing else", n)
	}
	if n, err := marks.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Errorf("the marks collection has %d documents (%v), want none", n, err)
	}
}

// A Fenced's refusal, ErrFenced, matches fence.ErrStale too, as every
// fence's refusal does; and only that one of the package's errors does.
func TestErrFencedMatchesErrStale(t *testing.T) {
	err := fmt.Errorf("%w (token %d)", ErrFenced, 5)
	if !errors.Is(err, ErrFenced) || !errors.Is(err, fence.ErrStale) {
		t.Errorf("%v: errors.Is ErrFenced %v, fence.ErrStale %v; want both", err,
			errors.Is(err, ErrFenced), errors.Is(err, fence.ErrStale))
	}
	for _, other := range []error{ErrFenceNotAtomic, ErrNotInTransaction, ErrNoTransactions} {
		if errors.Is(other, fence.ErrStale) || errors.Is(other, ErrFenced) {
			t.Errorf("%v matches fence.ErrStale or ErrFenced", other)
		}
	}
	if errors.Is(&fence.StaleError{Key: "k", Token: 1}, ErrFenced) {
		t.Error("a *fence.StaleError matches ErrFenced")
	}
}
