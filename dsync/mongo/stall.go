package dsyncmongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Stall records (driver.StallStore), kept in the records collection
// (records.go) under _ids "#stall/<session>/<nonce>" (a session and a
// nonce are fixed-length xids, so the _id stays short whatever the key).
// A record is inserted once and never updated, and deleted once older
// than stallRetention (oldStalls).

const (
	stallIDPrefix   = "#stall/"
	stallIDAfterAll = "#stall0" // '0' follows '/': the end of the prefix's range
)

// stallRetention is how long a stall record is kept, in store time from
// its At: long enough for an operator to see a stall of the night before.
const stallRetention = 24 * time.Hour

// stallDoc is a stall record's document. Session and Nonce are fields of
// their own too, so that reading one never parses the _id.
type stallDoc struct {
	ID           string    `bson:"_id"`
	Key          string    `bson:"key"`
	Token        int64     `bson:"token"`
	Owner        string    `bson:"owner"`
	Session      string    `bson:"session"`
	Nonce        string    `bson:"nonce"`
	Host         string    `bson:"host"`
	PID          int       `bson:"pid"`
	Since        time.Time `bson:"since"`
	LastProgress time.Time `bson:"progress"`
	At           time.Time `bson:"at"`
}

func stallID(session, nonce string) string { return stallIDPrefix + session + "/" + nonce }

// stall is the record d holds.
func (d stallDoc) stall() driver.Stall {
	return driver.Stall{Key: d.Key, Token: uint64(d.Token), Owner: d.Owner, Session: d.Session, Nonce: d.Nonce,
		Host: d.Host, PID: d.PID, Since: d.Since, LastProgress: d.LastProgress, At: d.At}
}

// RecordStall implements driver.StallStore: one insert of the record, and
// no other write.
func (rs *recordStore) RecordStall(ctx context.Context, s driver.Stall) error {
	return rs.insertRecord(ctx, "stall", stallDoc{
		ID: stallID(s.Session, s.Nonce), Key: s.Key, Token: int64(s.Token), Owner: s.Owner, Session: s.Session, Nonce: s.Nonce,
		Host: s.Host, PID: s.PID, Since: s.Since, LastProgress: s.LastProgress, At: s.At,
	})
}

// Stalls implements driver.StallStore: one find on the range of stall
// records' _ids. It does not prepare the store: a read must not create
// the collections (dsync status of an empty database).
func (rs *recordStore) Stalls(ctx context.Context) ([]driver.Stall, error) {
	cur, err := rs.coll.Find(ctx, stallRange())
	if err != nil {
		return nil, err
	}
	var docs []stallDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]driver.Stall, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.stall())
	}
	return out, nil
}

// stallRange selects the stall records.
func stallRange() bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: stallIDPrefix}, {Key: "$lt", Value: stallIDAfterAll}}}}
}

// oldStalls selects the stall records sent more than stallRetention
// before now, the earliest server time now: recordStore.clean deletes
// them with the other old records, in one delete. A delete that lands
// late deletes records that old, or nothing: a copy of a record inserted
// again since (a resend landing late) carries its old At.
func oldStalls(now time.Time) bson.D {
	return append(stallRange(), bson.E{Key: "at", Value: bson.D{{Key: "$lt", Value: now.Add(-stallRetention)}}})
}
