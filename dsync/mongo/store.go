package dsyncmongo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/internal/chain"
)

// lockDoc is a document of the lock collection: a claim of an epoch, the
// marker that ends one, or a key's floor (see package doc, "Protocol").
type lockDoc struct {
	ID      string `bson:"_id"`
	Key     string `bson:"key"`
	Epoch   int64  `bson:"epoch,omitempty"` // absent on floor documents
	Kind    string `bson:"kind"`
	Nonce   string `bson:"nonce,omitempty"`
	Session string `bson:"session,omitempty"`
	Owner   string `bson:"owner,omitempty"`
	Host    string `bson:"host,omitempty"`
	PID     int    `bson:"pid,omitempty"`
	// At is the latest possible server time when the document was sent:
	// for a claim, when it queued. A prune deletes only documents sent
	// before the floor it prunes below (chain.Store.Prune).
	At time.Time `bson:"at"`
	// Claims only: the session's TTL in milliseconds, and the expiry its
	// owner had seen confirmed when it claimed (chain.Doc).
	TTL int64     `bson:"ttl,omitempty"`
	Exp time.Time `bson:"exp,omitempty"`
}

// kindFloor is the kind of a floor document: {key, epoch: F, nonce}
// records that every epoch of key below F has ended; nonce is that of F's
// claim, which the floor counts only while it exists (chain.Floor). A key
// has one per floor raised and not yet pruned; its floor is the highest.
const kindFloor = "floor"

// floorID is the _id of key's floor document at floor. Claim and marker
// IDs end in "@digits" or "~nonce", so no floor ID is another key's claim
// or marker.
func floorID(key string, floor uint64) string { return fmt.Sprintf("%s#floor#%020d", key, floor) }

// sessionDoc is a document of the sessions collection: one generation of a
// session (see chain.Engine.RenewSession).
type sessionDoc struct {
	ID        string    `bson:"_id"`
	ExpiresAt time.Time `bson:"expiresAt"`
	Host      string    `bson:"host"`
	PID       int       `bson:"pid"`
	Started   time.Time `bson:"started"`
	Seen      time.Time `bson:"seen,omitempty"` // the server's time at the last renewal
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

// sessionDocsFilter selects every generation of session id: its own _id,
// and the _ids between id~ and id~: (':' follows the digits).
func sessionDocsFilter(id string) bson.D {
	return bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: id + "~"}, {Key: "$lt", Value: id + "~:"}}}},
	}}}
}

// store is the chain.Store of a Backend. Every read and update of one
// document filters on _id alone: FerretDB answers any other query by
// decoding the whole collection.
type store struct{ b *Backend }

var _ chain.Store = store{}

func (s store) Insert(ctx context.Context, d chain.Doc) error {
	insert := func() error {
		return s.b.write(ctx, insertOp(d), func(ctx context.Context) error {
			_, err := s.b.coll.InsertOne(ctx, s.toLockDoc(d))
			return err
		})
	}
	var err error
	if d.Kind == chain.KindClaim {
		// Never sent again here: a claim of unknown outcome is withdrawn
		// by its nonce (the engine sees to it), and its owner must again
		// follow a known epoch.
		err = insert()
	} else {
		// An end marker states a fact that stays true, and has a
		// deterministic _id: sending it again is harmless, and a duplicate
		// key then means an earlier attempt was applied. A transient
		// failure (a failover, a dropped connection, a busy FerretDB) gets
		// up to two more tries at once rather than waiting for Flush.
		err = s.b.retry(ctx, endAttempts, "end marker", insert)
	}
	if mongo.IsDuplicateKeyError(err) {
		return chain.ErrExists
	}
	return err
}

// insertOp names an insert for the test hook (WithFault): "claim" or "end".
func insertOp(d chain.Doc) string {
	if d.Kind == chain.KindClaim {
		return "claim"
	}
	return "end"
}

// InsertOrdered inserts docs in one ordered insert: the server applies
// them one after the other and stops at the first duplicate key (MongoDB
// and FerretDB alike).
func (s store) InsertOrdered(ctx context.Context, docs []chain.Doc) (int, error) {
	all := make([]any, len(docs))
	for i, d := range docs {
		all[i] = s.toLockDoc(d)
	}
	err := s.b.write(ctx, "claim", func(ctx context.Context) error {
		_, err := s.b.coll.InsertMany(ctx, all)
		return err
	})
	if err == nil {
		return -1, nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) != 1 || !isDuplicateKey(bwe.WriteErrors[0].Code) {
		return 0, err
	}
	return bwe.WriteErrors[0].Index, nil
}

// isDuplicateKey reports whether a write error code is a duplicate key.
func isDuplicateKey(code int) bool { return code == 11000 || code == 11001 || code == 12582 }

// toLockDoc is how d is stored; a claim names this process's host and pid.
func (s store) toLockDoc(d chain.Doc) lockDoc {
	doc := lockDoc{
		ID: d.ID, Key: d.Key, Epoch: int64(d.Epoch), Kind: d.Kind, Nonce: d.Nonce,
		Session: d.Session, Owner: d.Owner, At: chain.CeilMilli(d.Sent),
		TTL: d.TTL.Milliseconds(), Exp: d.Exp,
	}
	if d.Kind == chain.KindClaim {
		doc.Host, doc.PID = s.b.cfg.host, s.b.cfg.pid
	}
	return doc
}

func fromLockDoc(d *lockDoc) chain.Doc {
	return chain.Doc{
		ID: d.ID, Key: d.Key, Epoch: uint64(d.Epoch), Kind: d.Kind, Nonce: d.Nonce, Session: d.Session, Owner: d.Owner,
		Sent: d.At, TTL: time.Duration(d.TTL) * time.Millisecond, Exp: d.Exp,
	}
}

func (s store) Get(ctx context.Context, id string) (chain.Doc, bool, error) {
	var d lockDoc
	err := s.b.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return chain.Doc{}, false, nil
	}
	if err != nil {
		s.b.noteFailure(err)
		return chain.Doc{}, false, err
	}
	return fromLockDoc(&d), true, nil
}

func (s store) Newest(ctx context.Context, key string) (chain.Doc, bool, error) {
	d, found, err := s.b.newest(ctx, key)
	if err != nil || !found {
		return chain.Doc{}, false, err
	}
	return fromLockDoc(&d), true, nil
}

func (s store) Floor(ctx context.Context, key string, below uint64) (chain.Floor, bool, error) {
	filter := bson.D{{Key: "key", Value: key}, {Key: "kind", Value: kindFloor}}
	if below > 0 {
		filter = append(filter, bson.E{Key: "epoch", Value: bson.D{{Key: "$lt", Value: int64(below)}}})
	}
	var d lockDoc
	err := s.b.coll.FindOne(ctx, filter, options.FindOne().SetSort(bson.D{{Key: "epoch", Value: -1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return chain.Floor{}, false, nil
	}
	if err != nil {
		s.b.noteFailure(err)
		return chain.Floor{}, false, err
	}
	return chain.Floor{Epoch: uint64(d.Epoch), Nonce: d.Nonce}, true, nil
}

// RaiseFloor inserts a floor document, never updates one: two updates of
// one document applied at once can lose the higher value on FerretDB
// (see chain.Store), and a floor that went down would let a claim landing
// in a pruned hole count.
func (s store) RaiseFloor(ctx context.Context, key string, f chain.Floor, sent time.Time) error {
	doc := lockDoc{ID: floorID(key, f.Epoch), Key: key, Epoch: int64(f.Epoch), Kind: kindFloor, Nonce: f.Nonce, At: sent.UTC()}
	err := s.b.write(ctx, "floor", func(ctx context.Context) error {
		_, err := s.b.coll.InsertOne(ctx, doc)
		return err
	})
	if mongo.IsDuplicateKeyError(err) {
		return nil // recorded by an earlier attempt
	}
	return err
}

func (s store) Prune(ctx context.Context, key string, below uint64, sentBefore time.Time) error {
	return s.b.write(ctx, "prune", func(ctx context.Context) error {
		_, err := s.b.coll.DeleteMany(ctx, bson.D{
			{Key: "key", Value: key},
			{Key: "epoch", Value: bson.D{{Key: "$gt", Value: 1}, {Key: "$lt", Value: int64(below)}}},
			{Key: "at", Value: bson.D{{Key: "$lt", Value: sentBefore.UTC()}}},
		})
		return err
	})
}

func (s store) InsertSession(ctx context.Context, sess chain.Session) error {
	err := s.b.write(ctx, "session", func(ctx context.Context) error {
		_, err := s.b.sessions.InsertOne(ctx, sessionDoc{
			ID: sessionDocID(sess.ID, sess.Gen), ExpiresAt: sess.ExpiresAt, Host: s.b.cfg.host, PID: s.b.cfg.pid, Started: s.b.now(),
		})
		return err
	})
	if mongo.IsDuplicateKeyError(err) {
		return chain.ErrExists
	}
	return err
}

// RenewSession raises one session document's expiry. $max, never $set: a
// renewal applied late, after later ones, must not move the expiry back
// (on MongoDB; on FerretDB the engine sees to it that no two renewals of
// one document are ever in flight together). It is never sent again here:
// after an unknown outcome the engine moves to the session's next document.
//
// The renewal also samples the server's clock: it sets "seen" with
// $currentDate and reads the document back (findAndModify), so on a single
// server the estimator needs no sampling commands of its own while
// renewals flow (clockcheck.Estimator.Sampled).
func (s store) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	filter := bson.D{{Key: "_id", Value: sessionDocID(id, gen)}}
	update := bson.D{
		{Key: "$max", Value: bson.D{{Key: "expiresAt", Value: expires}}},
		{Key: "$currentDate", Value: bson.D{{Key: "seen", Value: true}}},
	}
	opts := options.FindOneAndUpdate().SetReturnDocument(options.After)
	found := true
	err := s.b.write(ctx, "renew", func(ctx context.Context) error {
		return s.b.est.Load().Sampled(ctx, func(ctx context.Context) (time.Time, error) {
			var d sessionDoc
			err := s.b.sessions.FindOneAndUpdate(ctx, filter, update, opts).Decode(&d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				found = false
				return time.Time{}, nil // not a sample, not an error
			}
			return d.Seen, err
		})
	})
	if err != nil {
		return false, err
	}
	return found, nil
}

// GetSession reads every document of the session (usually one) and
// returns the one with the highest expiry.
func (s store) GetSession(ctx context.Context, id string) (chain.Session, bool, error) {
	sess, found, err := s.b.readSession(ctx, id)
	if err != nil || !found {
		return chain.Session{}, found, err
	}
	return chain.Session{ID: id, Gen: sess.gen, ExpiresAt: sess.ExpiresAt}, true, nil
}

// latestSession is a session's document with the highest expiry.
type latestSession struct {
	sessionDoc
	gen int
}

// readSession reads every document of session id and returns the one with
// the highest expiry.
func (b *Backend) readSession(ctx context.Context, id string) (latestSession, bool, error) {
	cur, err := b.sessions.Find(ctx, sessionDocsFilter(id))
	if err != nil {
		b.noteFailure(err)
		return latestSession{}, false, err
	}
	var docs []sessionDoc
	if err := cur.All(ctx, &docs); err != nil {
		b.noteFailure(err)
		return latestSession{}, false, err
	}
	var best latestSession
	for _, d := range docs {
		if len(best.ID) == 0 || d.ExpiresAt.After(best.ExpiresAt) {
			best.sessionDoc = d
			best.gen, _ = strconv.Atoi(strings.TrimPrefix(d.ID, id+"~"))
		}
	}
	return best, len(docs) > 0, nil
}

// newest reads key's claim with the highest epoch.
func (b *Backend) newest(ctx context.Context, key string) (lockDoc, bool, error) {
	var d lockDoc
	err := b.coll.FindOne(ctx, bson.D{{Key: "key", Value: key}, {Key: "kind", Value: chain.KindClaim}},
		options.FindOne().SetSort(bson.D{{Key: "epoch", Value: -1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return lockDoc{}, false, nil
	}
	b.noteFailure(err)
	return d, err == nil, err
}

// clock is the engine's clock: server time from the backend's estimator,
// local time from its monotonic clock.
type clock struct{ b *Backend }

func (c clock) ServerNow() chain.Interval {
	iv := c.b.est.Load().Now()
	return chain.Interval{Earliest: iv.Earliest, Latest: iv.Latest}
}

func (c clock) Mono() time.Duration { return c.b.cfg.clock.Monotonic() }

// now is the midpoint of the server-time estimate, for what is shown
// (a session's start); zero before the estimator exists.
func (b *Backend) now() time.Time {
	if e := b.est.Load(); e != nil {
		return midpoint(e.Now())
	}
	return time.Time{}
}
