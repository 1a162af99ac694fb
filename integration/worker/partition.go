package worker

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/leader"
	leadermongo "github.com/go-dsync/dsync/leader/mongo"
	"github.com/go-dsync/dsync/leader/operator"
)

// ModePartition: the worker is a member of leader.Partition Config.Key of
// Config.Shards shards until it is told to stop (Run's context cancelled:
// it hands its shards over, then closes the Partition).
const ModePartition = "partition"

// PartitionKey is the stored key of shard s of partition name: the lock
// of the shard's election, whose holds the worker records.
func PartitionKey(name string, s int) string { return operator.LockKey(fmt.Sprintf("%s#%d", name, s)) }

// runPartition runs the worker's member. Each term of a shard is a hold
// of PartitionKey: the worker records it like an Election's term, with
// the deadline its recorder predicts, from when the shard's function
// starts to when it returns; a loss is the term's lease lost
// (ErrLeadershipLost), not a handover.
func (w *worker) runPartition(ctx context.Context, db *mongo.Database) error {
	cfg := &w.cfg
	locks, store, err := w.client(db)
	if err != nil {
		return err
	}
	defer locks.Close()
	members, err := leadermongo.NewStore(store)
	if err != nil {
		return err
	}
	p, err := leader.NewPartition(locks, cfg.Key, cfg.Shards, leader.WithMembers(members))
	if err != nil {
		return err
	}
	defer p.Close()
	err = p.Run(ctx, func(fctx context.Context, s int) error {
		term, ok := leader.TermOf(fctx)
		if !ok {
			return errors.New("a shard's function without a term (TermOf)")
		}
		key := PartitionKey(cfg.Key, s)
		h, deadline, stopWatch := w.beginTerm(fctx, p.ID(), key, term.Token)
		<-fctx.Done()
		h.end(deadline, history.SrcPred)
		stopWatch()
		w.rec.forget(key, h.token)
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
