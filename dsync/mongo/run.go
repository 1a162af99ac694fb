package dsyncmongo

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
)

// GetRun implements driver.RunReader: one find per number of digits of the
// run's epochs (one in practice: a segment's epochs have sixteen digits
// until the year 2286), over the _id index, in its order. An epoch's claim
// and markers have IDs that begin with the claim's ("key@epoch", then
// "#nonce" or "~nonce"), so that among epochs of as many digits the index
// orders them by epoch, each claim first; the filter on key and epoch
// leaves out another key's documents whose IDs fall in between. The hint
// keeps a server from reading them through the (key, kind, epoch) index
// and sorting afterwards, which would read every claim before any marker
// (FerretDB, which ignores hints, reads a find in one statement).
//
// On FerretDB this find is not by _id alone: it decodes the collection's
// documents to filter them, as the sweeper's queries do, which made four
// readers cycling on one key four times slower than reads by ID (17.5
// against 71.5 cycles/s, in a one-off measurement on the embedded
// server): there it answers driver.ErrRunsUnsupported. No other form of
// a run does better there: FerretDB 1.24 hands SQLite only a filter that
// is {_id: <string or ObjectId>} alone, and PostgreSQL equalities, never
// an _id $in list, an $or of _ids or a range (its backends' Query; with
// 20,000 unrelated documents, on SQLite, a find by _id took 0.4 ms, one
// by an $in of ten _ids 690 ms, and 60,000 documents made it 1,800 ms).
// A reader that takes the key again after its own release reads nothing
// anyway (dsync/internal/queue, tip.go).
func (s storeRoles) GetRun(ctx context.Context, key string, from, to uint64) ([]driver.Doc, error) {
	if s.platform.isFerret() && (s.cfg.test == nil || !s.cfg.test.readRuns) {
		return nil, driver.ErrRunsUnsupported
	}
	var run []driver.Doc
	for lo := from; lo <= to; {
		hi := min(to, lastOfDigits(lo))
		part, err := s.getRun(ctx, key, lo, hi)
		if err != nil {
			return nil, err
		}
		run = append(run, part...)
		if hi == to {
			break
		}
		lo = hi + 1
	}
	return run, nil
}

// getRun reads the run of epochs lo to hi, of as many digits.
func (s *Store) getRun(ctx context.Context, key string, lo, hi uint64) ([]driver.Doc, error) {
	filter := bson.D{
		{Key: "_id", Value: bson.D{{Key: "$gte", Value: driver.ClaimID(key, lo)}, {Key: "$lt", Value: driver.ClaimID(key, hi) + "\x7f"}}},
		{Key: "key", Value: key},
		{Key: "epoch", Value: bson.D{{Key: "$gte", Value: int64(lo)}, {Key: "$lte", Value: int64(hi)}}},
		{Key: "kind", Value: bson.D{{Key: "$in", Value: bson.A{driver.KindClaim, driver.KindRelease, driver.KindWithdraw, driver.KindDead}}}},
	}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetHint("_id_"))
	if err != nil {
		s.clock.noteFailure(err)
		return nil, wrap(ctx, "read a run of", key, err)
	}
	var docs []lockDoc
	if err := cur.All(ctx, &docs); err != nil {
		s.clock.noteFailure(err)
		return nil, wrap(ctx, "read a run of", key, err)
	}
	run := make([]driver.Doc, len(docs))
	for i := range docs {
		run[i] = fromLockDoc(&docs[i])
	}
	return run, nil
}

// lastOfDigits returns the largest number with as many decimal digits as n.
func lastOfDigits(n uint64) uint64 {
	digits := len(strconv.FormatUint(n, 10))
	if digits >= 20 {
		return ^uint64(0)
	}
	last := uint64(1)
	for range digits {
		last *= 10
	}
	return last - 1
}
