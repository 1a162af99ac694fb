package dsyncmongo

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
)

// InsertEach implements driver.Store: one unordered insert, which the
// server applies to each document apart from the others (MongoDB and
// FerretDB alike), reporting each duplicate key or other failure by its
// index. The engine sends gates through it, which state facts that stay
// true and have deterministic IDs (see Insert): the documents whose
// insert failed transiently are sent again, up to endAttempts in all, and
// a duplicate key then may mean that an earlier attempt landed.
func (s *lockStore) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	errs := make([]error, len(docs))
	todo := make([]int, len(docs)) // the indexes in docs of those to send
	for i := range todo {
		todo[i] = i
	}
	pause := retryPause
	for attempt := 1; len(todo) > 0; attempt++ {
		todo = s.insertEachOnce(ctx, docs, todo, errs)
		if len(todo) == 0 || attempt >= endAttempts || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(jitter(pause))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errs
		}
		pause *= 2
	}
	return errs
}

// insertEachOnce sends docs[i] for each i in todo in one unordered
// insert, records each outcome in errs, and returns the indexes of those
// that failed transiently.
func (s *lockStore) insertEachOnce(ctx context.Context, docs []driver.Doc, todo []int, errs []error) (again []int) {
	batch := make([]any, len(todo))
	for j, i := range todo {
		batch[j] = toLockDoc(docs[i])
	}
	err := s.write(ctx, "gate", func(ctx context.Context) error {
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
			if transientWrite(we) {
				again = append(again, i)
			}
		}
	}
	return again
}

// transientWrite reports whether one document's write error in a bulk
// reply is worth sending again: a write conflict, or FerretDB's SQLite
// busy (see transient).
func transientWrite(we mongo.WriteError) bool {
	return we.Code == 112 || strings.Contains(we.Message, "SQLITE_BUSY") || strings.Contains(we.Message, "database is locked")
}
