package dsyncmongo

import (
	"context"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Outage records (driver.OutageStore), kept in the records collection
// (records.go) under _ids "#o:<session>:<suspended>" (Suspended in Unix
// milliseconds; no other record's _id begins with "#o:"). A record is
// inserted once and never updated, and deleted once older than
// outageRetention (oldOutages). Each process records one per outage it
// rode through: kept in the sessions collection, they were what most of
// FerretDB's reads of sessions decoded after a day of outages.

const (
	outageIDPrefix   = "#o:"
	outageIDAfterAll = "#o;" // ';' follows ':': the end of the prefix's range
)

// outageRetention is how long an outage record is kept, in store time
// from its At: long enough for an operator to see an outage of the night
// before, as stall records.
const outageRetention = 24 * time.Hour

// outageDoc is an outage record's document.
type outageDoc struct {
	ID        string    `bson:"_id"`
	Session   string    `bson:"session"`
	Host      string    `bson:"host"`
	PID       int       `bson:"pid"`
	Suspended time.Time `bson:"suspended"`
	Resumed   time.Time `bson:"resumed"`
	Holds     int       `bson:"holds"`
	At        time.Time `bson:"at"`
}

func outageID(session string, suspended time.Time) string {
	return outageIDPrefix + session + ":" + strconv.FormatInt(suspended.UnixMilli(), 10)
}

// outage is the record d holds.
func (d outageDoc) outage() driver.Outage {
	return driver.Outage{Session: d.Session, Host: d.Host, PID: d.PID, Suspended: d.Suspended, Resumed: d.Resumed, Holds: d.Holds, At: d.At}
}

// RecordOutage implements driver.OutageStore: one insert of the record,
// and no other write.
func (rs *recordStore) RecordOutage(ctx context.Context, o driver.Outage) error {
	return rs.insertRecord(ctx, "outage", outageDoc{ID: outageID(o.Session, o.Suspended), Session: o.Session, Host: o.Host, PID: o.PID,
		Suspended: o.Suspended, Resumed: o.Resumed, Holds: o.Holds, At: o.At})
}

// ListOutages implements driver.OutageStore: one find on the range of
// outage records' _ids. It does not prepare the store, as no read does.
func (rs *recordStore) ListOutages(ctx context.Context, since time.Time) ([]driver.Outage, error) {
	var docs []outageDoc
	if err := rs.findSince(ctx, outageIDPrefix, outageIDAfterAll, since, &docs); err != nil {
		return nil, err
	}
	out := make([]driver.Outage, len(docs))
	for i, d := range docs {
		out[i] = d.outage()
	}
	return out, nil
}

// oldOutages selects the outage records sent more than outageRetention
// before now, the earliest server time now: recordStore.clean deletes
// them with the other old records, in one delete. A copy of a record inserted again since (a resend landing
// late) carries its old At, and goes at the next cleaning.
func oldOutages(now time.Time) bson.D {
	return append(idRange(outageIDPrefix, outageIDAfterAll), bson.E{Key: "at", Value: bson.D{{Key: "$lt", Value: now.Add(-outageRetention)}}})
}
