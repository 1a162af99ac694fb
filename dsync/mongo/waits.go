package dsyncmongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Lock sets' wait notes (driver.WaitStore) and deadlock records
// (driver.DeadlockStore), kept in the records collection (records.go)
// under _ids "#" + driver.WaitID ("#w:<set>:<n>") and "#" +
// driver.DeadlockID ("#d:<victim>:<n>"): no other record's _id begins
// with "#w:" or "#d:". Each is inserted once and never updated, and
// deleted once older than waitRetention (oldWaits).
//
// A set's notes carry the set and the number as fields of their own:
// LatestWait selects by the set, since the _ids of a set named "S:9" lie
// in the range of set "S"'s, and sorts by the number, which the _ids do
// not sort by (10 comes before 9).

const (
	waitIDPrefix       = "#w:"
	waitIDAfterAll     = "#w;" // ';' follows ':': the end of the prefix's range
	deadlockIDPrefix   = "#d:"
	deadlockIDAfterAll = "#d;"
)

// waitRetention is how long a note or a deadlock record is kept, in store
// time from its At: a wait of interest lasts seconds, and an operator
// looks at a deadlock of the night before.
const waitRetention = 24 * time.Hour

type claimRefDoc struct {
	Key   string `bson:"key"`
	Epoch int64  `bson:"epoch"`
	Nonce string `bson:"nonce"`
}

// waitDoc is a note's document.
type waitDoc struct {
	ID      string        `bson:"_id"`
	Set     string        `bson:"set"`
	N       int64         `bson:"n"`
	Key     string        `bson:"key"`
	Epoch   int64         `bson:"epoch"`
	Nonce   string        `bson:"nonce"`
	Holds   []claimRefDoc `bson:"holds"`
	Since   time.Time     `bson:"since"`
	Session string        `bson:"session"`
	Host    string        `bson:"host"`
	PID     int           `bson:"pid"`
	At      time.Time     `bson:"at"`
}

type deadlockEdgeDoc struct {
	Set    string `bson:"set"`
	Key    string `bson:"key"`
	Epoch  int64  `bson:"epoch"`
	HeldBy string `bson:"heldBy"`
	Token  int64  `bson:"token"`
}

// deadlockDoc is a deadlock record's document.
type deadlockDoc struct {
	ID      string            `bson:"_id"`
	Victim  string            `bson:"victim"`
	N       int64             `bson:"n"`
	Cycle   []deadlockEdgeDoc `bson:"cycle"`
	Session string            `bson:"session"`
	Host    string            `bson:"host"`
	PID     int               `bson:"pid"`
	At      time.Time         `bson:"at"`
}

func toWaitDoc(w driver.Wait) waitDoc {
	d := waitDoc{ID: "#" + driver.WaitID(w.Set, w.N), Set: w.Set, N: int64(w.N), Key: w.Key, Epoch: int64(w.Epoch), Nonce: w.Nonce,
		Holds: make([]claimRefDoc, len(w.Holds)), Since: w.Since, Session: w.Session, Host: w.Host, PID: w.PID, At: w.At}
	for i, h := range w.Holds {
		d.Holds[i] = claimRefDoc{Key: h.Key, Epoch: int64(h.Epoch), Nonce: h.Nonce}
	}
	return d
}

func (d waitDoc) wait() driver.Wait {
	w := driver.Wait{Set: d.Set, N: uint64(d.N), Key: d.Key, Epoch: uint64(d.Epoch), Nonce: d.Nonce,
		Holds: make([]driver.ClaimRef, len(d.Holds)), Since: d.Since, Session: d.Session, Host: d.Host, PID: d.PID, At: d.At}
	for i, h := range d.Holds {
		w.Holds[i] = driver.ClaimRef{Key: h.Key, Epoch: uint64(h.Epoch), Nonce: h.Nonce}
	}
	return w
}

func toDeadlockDoc(dl driver.Deadlock) deadlockDoc {
	d := deadlockDoc{ID: "#" + driver.DeadlockID(dl.Victim, dl.N), Victim: dl.Victim, N: int64(dl.N),
		Cycle: make([]deadlockEdgeDoc, len(dl.Cycle)), Session: dl.Session, Host: dl.Host, PID: dl.PID, At: dl.At}
	for i, e := range dl.Cycle {
		d.Cycle[i] = deadlockEdgeDoc{Set: e.Set, Key: e.Key, Epoch: int64(e.Epoch), HeldBy: e.HeldBy, Token: int64(e.Token)}
	}
	return d
}

func (d deadlockDoc) deadlock() driver.Deadlock {
	dl := driver.Deadlock{Victim: d.Victim, N: uint64(d.N), Cycle: make([]driver.DeadlockEdge, len(d.Cycle)),
		Session: d.Session, Host: d.Host, PID: d.PID, At: d.At}
	for i, e := range d.Cycle {
		dl.Cycle[i] = driver.DeadlockEdge{Set: e.Set, Key: e.Key, Epoch: uint64(e.Epoch), HeldBy: e.HeldBy, Token: uint64(e.Token)}
	}
	return dl
}

// PutWait implements driver.WaitStore: one insert, and no other write.
func (rs *recordStore) PutWait(ctx context.Context, w driver.Wait) error {
	return rs.insertRecord(ctx, "wait", toWaitDoc(w))
}

// PutDeadlock implements driver.DeadlockStore: one insert, and no other
// write.
func (rs *recordStore) PutDeadlock(ctx context.Context, d driver.Deadlock) error {
	return rs.insertRecord(ctx, "deadlock", toDeadlockDoc(d))
}

// LatestWait implements driver.WaitStore: one find on the range of set's
// _ids, of its set, the highest number first. It does not prepare the
// store, as no read does.
func (rs *recordStore) LatestWait(ctx context.Context, set string) (driver.Wait, bool, error) {
	prefix := waitIDPrefix + set + ":"
	filter := bson.D{
		{Key: "_id", Value: bson.D{{Key: "$gt", Value: prefix}, {Key: "$lt", Value: waitIDPrefix + set + ";"}}},
		{Key: "set", Value: set},
	}
	var d waitDoc
	err := rs.coll.FindOne(ctx, filter, options.FindOne().SetSort(bson.D{{Key: "n", Value: -1}})).Decode(&d)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return driver.Wait{}, false, nil
	case err != nil:
		return driver.Wait{}, false, err
	}
	return d.wait(), true, nil
}

// ListWaits implements driver.WaitStore: one find on the range of notes'
// _ids.
func (rs *recordStore) ListWaits(ctx context.Context, since time.Time) ([]driver.Wait, error) {
	var docs []waitDoc
	if err := rs.findSince(ctx, waitIDPrefix, waitIDAfterAll, since, &docs); err != nil {
		return nil, err
	}
	out := make([]driver.Wait, len(docs))
	for i, d := range docs {
		out[i] = d.wait()
	}
	return out, nil
}

// ListDeadlocks implements driver.DeadlockStore: one find on the range of
// deadlock records' _ids.
func (rs *recordStore) ListDeadlocks(ctx context.Context, since time.Time) ([]driver.Deadlock, error) {
	var docs []deadlockDoc
	if err := rs.findSince(ctx, deadlockIDPrefix, deadlockIDAfterAll, since, &docs); err != nil {
		return nil, err
	}
	out := make([]driver.Deadlock, len(docs))
	for i, d := range docs {
		out[i] = d.deadlock()
	}
	return out, nil
}

// oldWaits selects the notes and deadlock records sent more than
// waitRetention before now, the earliest server time now: recordStore.clean
// deletes them with the other old records, in one delete. A copy of a record inserted again since (a
// resend landing late) carries its old At, and goes at the next cleaning.
func oldWaits(now time.Time) bson.D {
	old := bson.E{Key: "at", Value: bson.D{{Key: "$lt", Value: now.Add(-waitRetention)}}}
	return bson.D{{Key: "$or", Value: bson.A{
		append(idRange(waitIDPrefix, waitIDAfterAll), old),
		append(idRange(deadlockIDPrefix, deadlockIDAfterAll), old),
	}}}
}
