package fencemongo

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/internal/testbed/fakewire"
)

// CheckTx against servers that answer as a test says (fakewire): what
// it sends, and how it reads the answers of a replica set and of a
// standalone mongod, which this machine's test server (FerretDB) cannot
// give. tx_replset_test.go checks the same on MongoDB itself.

// wireServer is a fake MongoDB: a replica set's primary (setName given)
// or a standalone, whose update and find replies a test sets, and which
// records the commands it gets.
type wireServer struct {
	mu     sync.Mutex
	cmds   []bson.Raw
	update bson.D // the reply to update
	find   bson.D // the reply to find
}

func (w *wireServer) serve(t *testing.T, setName string) *mongo.Client {
	addr := fakewire.Serve(t, func(cmd bson.Raw) bson.Raw {
		ok := bson.E{Key: "ok", Value: 1.0}
		name := fakewire.Name(cmd)
		switch name {
		case "hello", "ismaster":
			h := append(fakewire.Hello(), bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(30)})
			if setName != "" {
				h = append(h, bson.E{Key: "setName", Value: setName}, bson.E{Key: "hosts", Value: bson.A{"127.0.0.1:1"}})
			}
			return fakewire.Marshal(append(h, ok))
		case "buildinfo":
			return fakewire.Marshal(bson.D{{Key: "version", Value: "7.0.77"}, ok})
		case "ping", "endsessions", "aborttransaction":
			return fakewire.Marshal(bson.D{ok})
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.cmds = append(w.cmds, append(bson.Raw(nil), cmd...))
		switch name {
		case "update":
			return fakewire.Marshal(w.update)
		case "find":
			return fakewire.Marshal(w.find)
		}
		return fakewire.NotFound(name)
	})
	return fakewire.ConnectTo(t, addr)
}

// take returns the commands recorded so far and forgets them.
func (w *wireServer) take() []bson.Raw {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.cmds
	w.cmds = nil
	return c
}

// checkTx runs CheckTx in a transaction of its own (aborted after).
func checkTx(t *testing.T, client *mongo.Client, key string, token uint64) error {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	err = CheckTx(mongo.NewSessionContext(ctx, sess), client.Database("app").Collection("marks"), key, token)
	_ = sess.AbortTransaction(ctx)
	return err
}

// The check is one update in the transaction: filtered on the key's _id
// and a mark at most the token, it sets the mark and counts the check
// (so that it writes even under a token equal to the mark), with upsert.
// A duplicate _id is a refusal with the mark, read outside the
// transaction; a duplicate _id whose mark is not above the token (a
// document made after the transaction's snapshot) and a WriteConflict are
// labelled TransientTransactionError, for WithTransaction to retry.
func TestCheckTxOnTheWire(t *testing.T) {
	var w wireServer
	client := w.serve(t, "rs0")
	ok := bson.E{Key: "ok", Value: 1.0}

	w.update = bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(0)},
		{Key: "upserted", Value: bson.A{bson.D{{Key: "index", Value: int32(0)}, {Key: "_id", Value: "k"}}}}, ok}
	if err := checkTx(t, client, "k", 5); err != nil {
		t.Fatalf("an accepted check: %v", err)
	}
	cmds := w.take()
	if len(cmds) != 1 || fakewire.Name(cmds[0]) != "update" {
		t.Fatalf("an accepted check sent %v, want one update", cmds)
	}
	up := cmds[0]
	if c, _ := up.Lookup("update").StringValueOK(); c != "marks" {
		t.Errorf("the update is of %q, want marks", c)
	}
	for _, f := range []string{"txnNumber", "lsid"} {
		if _, err := up.LookupErr(f); err != nil {
			t.Errorf("the update has no %s: it is not in the transaction: %v", f, up)
		}
	}
	if a, ok := up.Lookup("autocommit").BooleanOK(); !ok || a {
		t.Errorf("the update's autocommit is %v: it is not in the transaction", up.Lookup("autocommit"))
	}
	if _, err := up.LookupErr("writeConcern"); err == nil {
		t.Errorf("the update sets a write concern inside a transaction: %v", up)
	}
	var stmt struct {
		Q, U   bson.D
		Upsert bool
	}
	updates := sequence(t, up, "updates")
	if len(updates) != 1 {
		t.Fatalf("the update carries %d statements, want 1", len(updates))
	}
	if err := bson.Unmarshal(updates[0], &stmt); err != nil {
		t.Fatal(err)
	}
	wantQ := bson.D{{Key: "_id", Value: "k"}, {Key: MarkField, Value: bson.D{{Key: "$lte", Value: int64(5)}}}}
	wantU := bson.D{{Key: "$set", Value: bson.D{{Key: MarkField, Value: int64(5)}}}, {Key: "$inc", Value: bson.D{{Key: ChecksField, Value: int64(1)}}}}
	if !stmt.Upsert || !sameDoc(t, stmt.Q, wantQ) || !sameDoc(t, stmt.U, wantU) {
		t.Errorf("the update: q %v, u %v, upsert %v; want q %v, u %v, upsert", stmt.Q, stmt.U, stmt.Upsert, wantQ, wantU)
	}

	dup := bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)},
		{Key: "writeErrors", Value: bson.A{bson.D{{Key: "index", Value: int32(0)}, {Key: "code", Value: int32(11000)},
			{Key: "errmsg", Value: `E11000 duplicate key error collection: app.marks index: _id_ dup key: { _id: "k" }`}}}}, ok}
	markDoc := func(mark int64) bson.D {
		return bson.D{{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: bson.A{bson.D{{Key: "_id", Value: "k"}, {Key: MarkField, Value: mark}}}},
			{Key: "id", Value: int64(0)}, {Key: "ns", Value: "app.marks"}}}, ok}
	}
	w.update, w.find = dup, markDoc(9)
	err := checkTx(t, client, "k", 5)
	var se *fence.StaleError
	if !errors.As(err, &se) || *se != (fence.StaleError{Key: "k", Token: 5, Mark: 9}) || !errors.Is(err, fence.ErrStale) {
		t.Fatalf("a refused check: %v, want a *fence.StaleError of key k, token 5, mark 9", err)
	}
	cmds = w.take()
	if len(cmds) != 2 || fakewire.Name(cmds[1]) != "find" {
		t.Fatalf("a refused check sent %d commands, want an update and a find", len(cmds))
	}
	for _, f := range []string{"txnNumber", "autocommit", "startTransaction"} {
		if _, err := cmds[1].LookupErr(f); err == nil {
			t.Errorf("the find of the mark has %s: it is in the transaction, which the refusal aborted: %v", f, cmds[1])
		}
	}

	// Transient: a duplicate _id with a mark not above the token, and a
	// write conflict.
	w.update, w.find = dup, markDoc(5)
	err = checkTx(t, client, "k", 5)
	var le mongo.LabeledError
	if errors.Is(err, fence.ErrStale) || !errors.As(err, &le) || !le.HasErrorLabel("TransientTransactionError") {
		t.Errorf("a duplicate _id with mark 5 under token 5: %v, want an error labelled TransientTransactionError", err)
	}
	w.update = bson.D{{Key: "ok", Value: 0.0}, {Key: "code", Value: int32(112)}, {Key: "codeName", Value: "WriteConflict"},
		{Key: "errmsg", Value: "Write conflict during plan execution and yielding is disabled."},
		{Key: "errorLabels", Value: bson.A{"TransientTransactionError"}}}
	err = checkTx(t, client, "k", 5)
	if errors.Is(err, fence.ErrStale) || !errors.As(err, &le) || !le.HasErrorLabel("TransientTransactionError") {
		t.Errorf("a write conflict: %v, want it labelled TransientTransactionError", err)
	}
}

// A standalone mongod refuses the transaction's first command; CheckTx
// wraps that refusal in ErrNoTransactions.
func TestCheckTxOnAStandalone(t *testing.T) {
	var w wireServer
	client := w.serve(t, "")
	w.update = bson.D{{Key: "ok", Value: 0.0}, {Key: "code", Value: int32(20)}, {Key: "codeName", Value: "IllegalOperation"},
		{Key: "errmsg", Value: "Transaction numbers are only allowed on a replica set member or mongos"}}
	err := checkTx(t, client, "k", 5)
	var se mongo.ServerError
	if !errors.Is(err, ErrNoTransactions) || !errors.As(err, &se) || !se.HasErrorCode(20) || errors.Is(err, fence.ErrStale) {
		t.Fatalf("CheckTx on a standalone: %v, want ErrNoTransactions wrapping the server's refusal", err)
	}
	if !strings.Contains(err.Error(), "replica set") {
		t.Errorf("the refusal %q does not say what is needed", err)
	}
}

// sequence is cmd's array named id: in its body, or in a document
// sequence of its OP_MSG (the sections after the body, which fakewire
// leaves in cmd's bytes), as the driver sends a write's statements.
func sequence(t *testing.T, cmd bson.Raw, id string) []bson.Raw {
	t.Helper()
	if arr, ok := cmd.Lookup(id).ArrayOK(); ok {
		vals, _ := arr.Values()
		var docs []bson.Raw
		for _, v := range vals {
			docs = append(docs, v.Document())
		}
		return docs
	}
	rest := []byte(cmd)[binary.LittleEndian.Uint32(cmd):]
	for len(rest) > 5 && rest[0] == 1 {
		size := int(binary.LittleEndian.Uint32(rest[1:]))
		if size < 4 || size+1 > len(rest) {
			break
		}
		sec := rest[5 : 1+size]
		rest = rest[1+size:]
		name, docs, ok := strings.Cut(string(sec), "\x00")
		if !ok || name != id {
			continue
		}
		var out []bson.Raw
		for b := []byte(docs); len(b) >= 5; {
			n := int(binary.LittleEndian.Uint32(b))
			if n < 5 || n > len(b) {
				break
			}
			out = append(out, bson.Raw(b[:n]))
			b = b[n:]
		}
		return out
	}
	return nil
}

// sameDoc reports whether a and b marshal alike.
func sameDoc(t *testing.T, a, b bson.D) bool {
	t.Helper()
	ra, err := bson.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := bson.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(ra).String() == bson.Raw(rb).String()
}

// Once ctx has ended, CheckTx returns its cause, unchanged: before the
// driver client knows its server, and after.
func TestCheckTxReturnsCtxCause(t *testing.T) {
	var w wireServer
	client := w.serve(t, "rs0")
	w.update = bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
	cause := errors.New("the caller gave up")
	for _, known := range []bool{false, true} {
		if known {
			if err := checkTx(t, client, "k", 5); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		sess, err := client.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		cancel(cause)
		err = CheckTx(mongo.NewSessionContext(ctx, sess), client.Database("app").Collection("marks"), "k", 5)
		if err != cause {
			t.Errorf("CheckTx with ctx ended (server known: %v): %v, want the cause %v", known, err, cause)
		}
		_ = sess.AbortTransaction(context.Background())
		sess.EndSession(context.Background())
	}
}
