package fencemongo

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/fence/fencetest"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// txResource is a register per key (a document of docs) written in a
// transaction under CheckTx: the fencetest Resource of this package's
// adapter. With skipCheck, the planted adapter, it writes without the
// check.
type txResource struct {
	client      *mongo.Client
	marks, regs *mongo.Collection
	skipCheck   bool
}

func newTxResource(db *mongo.Database, skipCheck bool) *txResource {
	return &txResource{client: db.Client(), marks: db.Collection("marks"), regs: db.Collection("docs"), skipCheck: skipCheck}
}

// Write implements fencetest.Resource: WithTransaction of CheckTx,
// w.Admitted, and the register's write.
func (r *txResource) Write(ctx context.Context, w fencetest.Write) error {
	sess, err := r.client.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(context.WithoutCancel(ctx))
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		if !r.skipCheck {
			if err := CheckTx(ctx, r.marks, w.Key, w.Token); err != nil {
				return nil, err
			}
		}
		if w.Admitted != nil {
			if err := w.Admitted(ctx); err != nil {
				return nil, err
			}
		}
		_, err := r.regs.UpdateOne(ctx, bson.D{{Key: "_id", Value: w.Key}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: w.Value}}}}, options.UpdateOne().SetUpsert(true))
		return nil, err
	})
	return err
}

// Read implements fencetest.Resource.
func (r *txResource) Read(ctx context.Context, key string) (int64, error) {
	var d struct {
		V int64 `bson:"v"`
	}
	err := r.regs.FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return d.V, err
}

// The conformance suite, on transactions fenced by CheckTx.
func TestCheckTxConformance(t *testing.T) {
	db := txDB(t)
	var o fencetest.Options // the suite's count, or -fencetest.trials
	if longtest.Enabled() {
		o.Trials = 2000
	}
	fencetest.Run(t, newTxResource(db, false), o)
}

// The negative control: a Resource that writes its transactions without
// CheckTx is caught (a paused holder's write applies after the next
// holder's, in every third trial).
func TestCheckTxPlantedSkipIsCaught(t *testing.T) {
	db := txDB(t)
	rep, err := fencetest.Check(t.Context(), newTxResource(db, true), fencetest.Options{Trials: 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if len(rep.StaleWrites) == 0 || rep.Err() == nil {
		t.Errorf("transactions written without CheckTx were not caught: %s", rep)
	}
}
