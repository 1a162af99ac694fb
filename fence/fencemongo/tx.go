package fencemongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/go-dsync/dsync/fence"
)

// The fields of a key's document in the marks collection of CheckTx.
const (
	// MarkField is the key's mark: the highest token accepted, an int64.
	MarkField = "mark"
	// ChecksField counts the checks of the key that committed. Every
	// check changes it, so that every check writes the document, even
	// under a token equal to the mark (an update that changes nothing
	// writes nothing, and would conflict with no other transaction).
	ChecksField = "checks"
)

// illegalOperation is the code of a standalone mongod's refusal of a
// transaction: "Transaction numbers are only allowed on a replica set
// member or mongos".
const illegalOperation = 20

// CheckTx keeps the fencing contract of package fence for the writes of
// ctx's transaction.
//
// The transaction is the one running in ctx's session. Call CheckTx first
// in the transaction (in Session.WithTransaction's callback, with the ctx
// the callback is given), then read and write. It writes key's document in
// marks, in the transaction: it raises the key's mark to token, or, if
// the mark is above token, refuses with a *fence.StaleError (matching
// fence.ErrStale) that carries the mark. The transaction's writes then
// commit only together with the raise, so the documents it writes, in
// any collection, are written under one check.
//
// A refusal aborts the transaction on the server (it is the server's
// duplicate key error on the key's _id): no write of the transaction,
// before the check or after, can commit. Return the error from the
// callback, which WithTransaction then returns without retrying. A
// callback that swallows it makes WithTransaction commit, which fails
// with NoSuchTransaction, and retry until its time runs out. A caller
// that runs its own transaction aborts it.
//
// Two transactions that check one key conflict, whatever their tokens.
// Every check writes the key's document. The server fails the second
// writer of a document with a WriteConflict labelled
// TransientTransactionError. It fails the same way any transaction whose
// snapshot is older than a write of the document committed since. CheckTx
// returns that error with its label. WithTransaction retries such a
// transaction from the start, in a new snapshot that sees the other's
// raise once it has committed: a stale holder is then refused, a later
// one accepted. So no transaction with a token below the mark commits,
// however late it runs or however old its snapshot.
//
// Before any I/O, CheckTx refuses an invalid key or token (fence.Check)
// and a ctx without a transaction running in a session of marks'
// client (ErrNotInTransaction). It asks the server once per driver
// client whether it is FerretDB (buildInfo, outside the transaction). It
// refuses FerretDB, which has no transactions, with ErrNoTransactions,
// before any write. A standalone mongod's refusal of the transaction is
// returned wrapped in ErrNoTransactions too. Once ctx has ended, its
// cause is returned. Other errors are the server's,
// wrapped.
func CheckTx(ctx context.Context, marks *mongo.Collection, key string, token uint64) error {
	if err := fence.Check(key, token); err != nil {
		return err
	}
	if marks == nil {
		return errors.New("fencemongo: CheckTx with a nil marks collection")
	}
	sess := mongo.SessionFromContext(ctx)
	switch {
	case sess == nil:
		return fmt.Errorf("%w: ctx carries no session", ErrNotInTransaction)
	case !sess.TransactionRunning():
		return fmt.Errorf("%w: ctx's session has no transaction running", ErrNotInTransaction)
	case sess.Client() != marks.Database().Client():
		return fmt.Errorf("%w: ctx's session is of another driver client than the marks collection's", ErrNotInTransaction)
	}
	// Outside the transaction: buildInfo may not run in one.
	outside := mongo.NewSessionContext(ctx, nil)
	ferret, err := serverIsFerretDB(outside, marks.Database())
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("fencemongo: CheckTx: asking the server what it is (buildInfo): %w", err)
	}
	if ferret {
		return fmt.Errorf("%w (the server is FerretDB)", ErrNoTransactions)
	}
	filter := bson.D{{Key: "_id", Value: key}, {Key: MarkField, Value: bson.D{{Key: "$lte", Value: int64(token)}}}}
	update := bson.D{
		{Key: "$set", Value: bson.D{{Key: MarkField, Value: int64(token)}}},
		{Key: "$inc", Value: bson.D{{Key: ChecksField, Value: int64(1)}}},
	}
	// No document of the key with a mark at most token: the upsert
	// inserts one, which the key's document, if there is one (its mark
	// above token), refuses as a duplicate _id.
	_, err = marks.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
	var se mongo.ServerError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case mongo.IsDuplicateKeyError(err):
		return refusal(outside, marks, key, token, err)
	case errors.As(err, &se) && se.HasErrorCode(illegalOperation):
		return fmt.Errorf("%w: %w", ErrNoTransactions, err)
	}
	return fmt.Errorf("fencemongo: CheckTx: %w", err)
}

// refusal is CheckTx's error after the server refused the key's
// document as a duplicate _id (and aborted the transaction): a
// *fence.StaleError with the mark if a read of it, outside the
// transaction, finds it above token. Marks only rise, so the mark read
// is at least the one that refused. Otherwise the document that refused
// was not in the transaction's snapshot (made since by a token at most
// this one), or the read failed, or the document's mark is not an
// integer: dup, in an error labelled TransientTransactionError, which
// WithTransaction retries (or ctx's cause, if ctx has ended).
func refusal(outside context.Context, marks *mongo.Collection, key string, token uint64, dup error) error {
	var d struct {
		Mark int64 `bson:"mark"`
	}
	err := marks.Clone(options.Collection().SetReadPreference(readpref.Primary())).
		FindOne(outside, bson.D{{Key: "_id", Value: key}}, options.FindOne().SetProjection(bson.D{{Key: MarkField, Value: 1}})).
		Decode(&d)
	switch {
	case err == nil && d.Mark > 0 && uint64(d.Mark) > token:
		return &fence.StaleError{Key: key, Token: token, Mark: uint64(d.Mark)}
	case outside.Err() != nil:
		return context.Cause(outside)
	}
	if err == nil {
		err = fmt.Errorf("its mark is %d, not above token %d", d.Mark, token)
	}
	return &undecidedError{dup: dup, read: err}
}

// An undecidedError is CheckTx's when the server refused the key's
// document as a duplicate _id but a mark above the token was not seen.
// It is labelled TransientTransactionError (mongo.LabeledError), so
// that WithTransaction runs the transaction again.
type undecidedError struct {
	dup  error // the server's duplicate key error
	read error // why the mark read did not show a mark above the token
}

func (e *undecidedError) Error() string {
	return fmt.Sprintf("fencemongo: CheckTx: the key's document refused the raise (%v), but reading its mark after: %v", e.dup, e.read)
}

func (e *undecidedError) Unwrap() error { return e.dup }

// HasErrorLabel reports whether label is TransientTransactionError.
func (e *undecidedError) HasErrorLabel(label string) bool {
	return label == "TransientTransactionError"
}
