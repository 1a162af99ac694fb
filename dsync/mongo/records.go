package dsyncmongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync/driver"
)

// recordsSuffix names the records collection after the lock collection:
// "dsync_locks_records" by default.
const recordsSuffix = "_records"

// A recordStore serves what the records collection holds: the stall
// records (stall.go), lock sets' wait notes and deadlock records
// (waits.go), and the outage records (outage.go). Each record is inserted
// once under an _id of its own prefix, never updated, and deleted once
// older than its retention (clean).
//
// They live apart from the sessions because FerretDB answers a find that
// is not an _id equality by decoding the whole collection: the reads of
// sessions that a waiter and the outage rule send (GetSession's range,
// ReadUptime) would decode every record kept for the day, and outage
// records grow with the processes times the outages ridden through.
type recordStore struct {
	coll   *mongo.Collection
	cfg    *config
	writer *writer
	clock  *serverClock
	// prepare prepares the store (Store.prepare), before the first write
	// of a record.
	prepare func(context.Context) (*clockcheck.Estimator, error)
}

// insertRecord inserts doc once, after preparing the store.
func (rs *recordStore) insertRecord(ctx context.Context, op string, doc any) error {
	if _, err := rs.prepare(ctx); err != nil {
		return err
	}
	err := rs.writer.write(ctx, op, func(ctx context.Context) error {
		_, err := rs.coll.InsertOne(ctx, doc)
		return err
	})
	if mongo.IsDuplicateKeyError(err) {
		return driver.ErrExists
	}
	return err
}

// findSince decodes into docs the records of the _id range [from, to)
// sent at or after since.
func (rs *recordStore) findSince(ctx context.Context, from, to string, since time.Time, docs any) error {
	filter := append(idRange(from, to), bson.E{Key: "at", Value: bson.D{{Key: "$gte", Value: since}}})
	cur, err := rs.coll.Find(ctx, filter)
	if err != nil {
		return err
	}
	return cur.All(ctx, docs)
}

// idRange selects the _ids that begin with prefix, whose range ends
// before afterAll.
func idRange(prefix, afterAll string) bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: prefix}, {Key: "$lt", Value: afterAll}}}}
}

// oldRecords selects the records older than their retention at now, the
// earliest server time now.
func oldRecords(now time.Time) bson.D {
	return bson.D{{Key: "$or", Value: bson.A{oldStalls(now), oldWaits(now), oldOutages(now)}}}
}

// clean deletes the records older than their retention, in one delete
// (on FerretDB, which decodes the collection for it, one pass). Best
// effort. It is sent when sessionStore.clean is: when a process that made
// a session closes its store, and by sweeps. Without Prepare's estimator
// it deletes nothing, as sessionStore.clean.
func (rs *recordStore) clean(ctx context.Context) {
	e := rs.clock.forWrites()
	if e == nil {
		return
	}
	if _, err := rs.writer.deleteWhere(ctx, rs.coll, "clean records", oldRecords(e.Now().Earliest)); err != nil {
		rs.cfg.logger.Debug("dsyncmongo: deleting old records failed", "err", err)
	}
}
