package dsyncmongo

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
)

// InsertEach implements driver.Store with one unordered insert. The server
// applies it to each document apart from the others (MongoDB and FerretDB
// alike), and reports each duplicate key or other failure by its index. The
// engine sends gates through it, which state facts that stay true and have
// deterministic IDs (see Insert): the documents whose insert failed
// transiently are sent again, up to endAttempts in all, and a duplicate key
// then may mean that an earlier attempt landed.
func (s *Store) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	errs := make([]error, len(docs))
	todo := make([]int, len(docs)) // the indexes in docs of those to send
	for i := range todo {
		todo[i] = i
	}
	_ = retry(ctx, s.cfg.logger, endAttempts, "gates", func() error {
		todo = s.insertEachOnce(ctx, docs, todo, errs)
		if len(todo) == 0 {
			return nil
		}
		return errs[todo[0]] // transient, as each of todo's
	})
	return errs
}

// insertEachOnce sends docs[i] for each i in todo in one unordered
// insert, records each outcome in errs, and returns the indexes of those
// that failed transiently.
func (s *Store) insertEachOnce(ctx context.Context, docs []driver.Doc, todo []int, errs []error) (again []int) {
	batch := make([]any, len(todo))
	for j, i := range todo {
		batch[j] = toLockDoc(docs[i])
	}
	err := s.writer.write(ctx, "gate", func(ctx context.Context) error {
		_, err := s.coll.InsertMany(ctx, batch, options.InsertMany().SetOrdered(false))
		return err
	})
	var bwe mongo.BulkWriteException
	if err != nil && (!errors.As(err, &bwe) || bwe.WriteConcernError != nil) {
		// The request as a whole failed, or was not acknowledged as asked:
		// every outcome is unknown.
		for _, i := range todo {
			errs[i] = err
		}
		if transient(err) {
			return todo
		}
		return nil
	}
	failed := make(map[int]mongo.WriteError, len(bwe.WriteErrors))
	for _, we := range bwe.WriteErrors {
		failed[we.Index] = we.WriteError
	}
	for j, i := range todo {
		we, ok := failed[j]
		switch {
		case !ok:
			errs[i] = nil
		case isDuplicateKey(we.Code):
			errs[i] = driver.ErrExists
		default:
			errs[i] = we
			if transient(we) {
				again = append(again, i)
			}
		}
	}
	return again
}
