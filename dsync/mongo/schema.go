package dsyncmongo

import (
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The documents this driver stores. Five collections, named after the
// lock collection (DefaultCollection unless WithCollection says
// otherwise): the lock collection holds the keys' queues, "_sessions" the
// sessions (and the server-time samples' document), "_events" the
// wake-up events (feed.go), "_keys" the directory of keys (directory.go),
// "_records" the stall, wait, deadlock and outage records (records.go).

// lockDoc is a document of the lock collection: a claim of an epoch, its
// shadow, a marker that ends a claim, a document of a read lane, a gate,
// the protocol document or a done record (driver.Doc).
type lockDoc struct {
	ID      string `bson:"_id"`
	Key     string `bson:"key"`
	Epoch   int64  `bson:"epoch,omitempty"`
	Kind    string `bson:"kind"`
	Nonce   string `bson:"nonce,omitempty"`
	Session string `bson:"session,omitempty"`
	Owner   string `bson:"owner,omitempty"`
	Host    string `bson:"host,omitempty"`
	PID     int    `bson:"pid,omitempty"`
	// Claims only: the store's history its sender knew its segment in
	// (driver.Doc.History).
	History string `bson:"history,omitempty"`
	// Claims only: the lock set the claim is a member of
	// (driver.Doc.Waiter); absent: none.
	Waiter string `bson:"waiter,omitempty"`
	// At is the latest possible server time when the document was sent:
	// for a claim, when it queued. Compaction deletes the documents of
	// idle keys sent before a time (driver.Maintainer.Compact).
	At time.Time `bson:"at"`
	// Claims only: the session's TTL in milliseconds, and the expiry its
	// owner had seen confirmed when it claimed.
	TTL int64     `bson:"ttl,omitempty"`
	Exp time.Time `bson:"exp,omitempty"`
	// Claims only: the outage grace in milliseconds (driver.Doc.Grace);
	// absent: none.
	Grace int64 `bson:"grace,omitempty"`
	// Claims only: how the claim shares its key (absent: exclusive, as
	// every claim of an older dsync is), its weight and the key's limit.
	Mode   int   `bson:"mode,omitempty"`
	Weight int64 `bson:"weight,omitempty"`
	Limit  int64 `bson:"limit,omitempty"`
	// Release markers only: the claim held with every lower claim ended
	// (driver.Doc.Clear).
	Clear bool `bson:"clear,omitempty"`
	// A read lane's (driver.KindSlot): a claim's mark that it roots one,
	// the slot of a lane's document (of a root's end marker: the lane's
	// last), and a seal's writer, its epoch and nonce (driver.Doc).
	Lane      bool   `bson:"lane,omitempty"`
	Slot      int64  `bson:"slot,omitempty"`
	SealEpoch int64  `bson:"sealEpoch,omitempty"`
	SealNonce string `bson:"sealNonce,omitempty"`
	// Done records only: the token of the run that succeeded
	// (driver.Doc.Token). A done record has no epoch: prunes never match
	// it.
	Token int64 `bson:"token,omitempty"`
	// The segment of a claim or a gate, a gate's bucket, and the protocol
	// document's bucket length in milliseconds (driver.Doc).
	Seg    int64 `bson:"seg,omitempty"`
	Bucket int64 `bson:"bucket,omitempty"`
	Span   int64 `bson:"span,omitempty"`
	// Gates only: the key's floor (driver.Doc.Floor), its epoch and the
	// nonce of its claim.
	Floor      int64  `bson:"floor,omitempty"`
	FloorNonce string `bson:"floorNonce,omitempty"`
}

// toLockDoc is how d is stored.
func toLockDoc(d driver.Doc) lockDoc {
	return lockDoc{
		ID: d.ID, Key: d.Key, Epoch: int64(d.Epoch), Kind: d.Kind, Nonce: d.Nonce,
		Session: d.Session, Owner: d.Owner, Host: d.Host, PID: d.PID, History: d.History, Waiter: d.Waiter, At: ceilMilli(d.Sent),
		TTL: d.TTL.Milliseconds(), Exp: d.Exp, Grace: d.Grace.Milliseconds(), Mode: int(d.Mode), Weight: d.Weight, Limit: d.Limit, Clear: d.Clear,
		Lane: d.Lane, Slot: int64(d.Slot), SealEpoch: int64(d.SealEpoch), SealNonce: d.SealNonce,
		Token: int64(d.Token),
		Seg:   int64(d.Seg), Bucket: d.Bucket, Span: d.Span.Milliseconds(),
		Floor: int64(d.Floor.Epoch), FloorNonce: d.Floor.Nonce,
	}
}

func fromLockDoc(d *lockDoc) driver.Doc {
	out := driver.Doc{
		ID: d.ID, Key: d.Key, Epoch: uint64(d.Epoch), Kind: d.Kind, Nonce: d.Nonce, Session: d.Session, Owner: d.Owner,
		Host: d.Host, PID: d.PID, History: d.History, Waiter: d.Waiter, Sent: d.At, TTL: time.Duration(d.TTL) * time.Millisecond, Exp: d.Exp,
		Grace: time.Duration(d.Grace) * time.Millisecond,
		Mode:  driver.Mode(d.Mode), Weight: d.Weight, Limit: d.Limit, Clear: d.Clear,
		Lane: d.Lane, Slot: uint64(d.Slot), SealEpoch: uint64(d.SealEpoch), SealNonce: d.SealNonce,
		Token: uint64(d.Token),
		Seg:   uint64(d.Seg), Bucket: d.Bucket, Span: time.Duration(d.Span) * time.Millisecond,
	}
	if d.Floor != 0 {
		out.Floor = driver.Floor{Epoch: uint64(d.Floor), Nonce: d.FloorNonce, Seg: uint64(d.Seg)}
	}
	return out
}

// ceilMilli rounds t up to BSON's millisecond: a document's "at" is the
// latest possible time it was sent, and must stay so once stored.
func ceilMilli(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); r.Before(t) {
		return r.Add(time.Millisecond).UTC()
	}
	return t.UTC()
}

// sessionDoc is a document of the sessions collection: one generation of
// a session (driver.Session).
type sessionDoc struct {
	ID        string    `bson:"_id"`
	ExpiresAt time.Time `bson:"expiresAt"`
	Host      string    `bson:"host"`
	PID       int       `bson:"pid"`
	Started   time.Time `bson:"started"`
	Seen      time.Time `bson:"seen,omitempty"` // the server's time at the last renewal
	// Written by RenewSessionUp, and V by InsertSessionUp too
	// (sessions_uptime.go): the writer's record of up-time, and the mark
	// that it keeps one (upVersion).
	Up []upSpanDoc `bson:"up,omitempty"`
	V  int         `bson:"v,omitempty"`
}

// upSpanDoc is a span of a session document's record of up-time
// (driver.UpSpan).
type upSpanDoc struct {
	From time.Time `bson:"from"`
	To   time.Time `bson:"to"`
}

// sessionDocID is the _id of generation gen of session id: the session ID
// itself for the first, then id~1, id~2... Session IDs are xids, 20
// characters of [0-9a-v], so no other session's documents share the prefix.
func sessionDocID(id string, gen int) string {
	if gen == 0 {
		return id
	}
	return id + "~" + strconv.Itoa(gen)
}

// sessionDocsFilter selects every generation of session id, in one range
// of _ids from id to id~: (':' follows the digits), and may select other
// documents whose _ids begin with id (a session ID of which id is a
// prefix): the caller keeps only those sessionGenOf accepts. FerretDB
// reads the whole collection for either a range or an $or of _ids (only
// an equality on _id uses its index), but serves the one range several
// times faster than the $or of the _id and the generations' range that
// this was (docs/contributing.md, the outage soak); every waiter that
// looks at a holder's session reads so.
func sessionDocsFilter(id string) bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: id}, {Key: "$lt", Value: id + "~:"}}}}
}

// sessionGenOf reports which generation of session id the document
// docID is, and whether it is one (sessionDocID's inverse).
func sessionGenOf(id, docID string) (gen int, ok bool) {
	if docID == id {
		return 0, true
	}
	rest, found := strings.CutPrefix(docID, id+"~")
	if !found {
		return 0, false
	}
	gen, err := strconv.Atoi(rest)
	if err != nil || gen < 1 || sessionDocID(id, gen) != docID {
		return 0, false
	}
	return gen, true
}

// eventDoc is a document of the capped events collection (feed.go).
type eventDoc struct {
	ID    bson.ObjectID `bson:"_id"`
	Kind  string        `bson:"kind"`
	Proc  string        `bson:"proc"`
	Key   string        `bson:"key,omitempty"`
	Epoch int64         `bson:"epoch,omitempty"`
	At    time.Time     `bson:"at"`              // earliest server time at sending
	Until time.Time     `bson:"until,omitempty"` // "wait": when the announcement lapses
	Own   int64         `bson:"own,omitempty"`   // "wait": the epoch of the waiter's own claim (driver.Event.Own)
}
