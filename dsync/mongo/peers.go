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

// Peers of direct hints (driver.PeerStore), kept in the sessions
// collection beside the sessions, under _ids that begin with "#" (a
// session's are xids): the hint key, "#hint/key", inserted once and never
// updated; and each process's address, "#hint/peer/<id>", with an
// expiresAt, so that the sweeps' cleaning of expired sessions deletes
// the records of processes long gone with them (sessions.go).

const (
	hintKeyID      = "#hint/key"
	peerIDPrefix   = "#hint/peer/"
	peerIDAfterAll = "#hint/peer0" // '0' follows '/': the end of the prefix's range
)

// hintKeyDoc is the hint key's document. It has no expiresAt: the
// cleaning of sessions never selects it.
type hintKeyDoc struct {
	ID  string `bson:"_id"`
	Key []byte `bson:"key"`
}

// peerDoc is a process's address for hints.
type peerDoc struct {
	ID        string    `bson:"_id"`
	Addr      string    `bson:"addr"`
	ExpiresAt time.Time `bson:"expiresAt"`
}

// HintKey implements driver.PeerStore: a read of the key recorded (each
// process calls it every 30 s: one command while there is one); if none,
// an insert of key, and on a duplicate, a read of the key that won.
func (ss *sessionStore) HintKey(ctx context.Context, key []byte) ([]byte, error) {
	if _, err := ss.prepare(ctx); err != nil {
		return nil, err
	}
	if k, found, err := ss.readHintKey(ctx); err != nil || found {
		return k, err
	}
	err := ss.writer.write(ctx, "hint key", func(ctx context.Context) error {
		_, err := ss.coll.InsertOne(ctx, hintKeyDoc{ID: hintKeyID, Key: key})
		return err
	})
	if err == nil {
		return key, nil
	}
	// A duplicate, or an insert of unknown outcome (ours may have landed):
	// either way the key recorded is the one to use.
	k, found, rerr := ss.readHintKey(ctx)
	switch {
	case rerr != nil:
		return nil, rerr
	case !found:
		return nil, err
	}
	return k, nil
}

// readHintKey reads the hint key recorded, if any.
func (ss *sessionStore) readHintKey(ctx context.Context) (key []byte, found bool, err error) {
	var d hintKeyDoc
	err = ss.coll.FindOne(ctx, bson.D{{Key: "_id", Value: hintKeyID}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return d.Key, true, nil
}

// PutPeer implements driver.PeerStore: one upsert by _id.
func (ss *sessionStore) PutPeer(ctx context.Context, p driver.Peer) error {
	if _, err := ss.prepare(ctx); err != nil {
		return err
	}
	return ss.writer.write(ctx, "peer", func(ctx context.Context) error {
		_, err := ss.coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: peerIDPrefix + p.ID}},
			peerDoc{ID: peerIDPrefix + p.ID, Addr: p.Addr, ExpiresAt: p.ExpiresAt},
			options.Replace().SetUpsert(true))
		return err
	})
}

// Peers implements driver.PeerStore: one find on the range of peers'
// _ids.
func (ss *sessionStore) Peers(ctx context.Context, after time.Time) ([]driver.Peer, error) {
	if _, err := ss.prepare(ctx); err != nil {
		return nil, err
	}
	cur, err := ss.coll.Find(ctx, bson.D{
		{Key: "_id", Value: bson.D{{Key: "$gt", Value: peerIDPrefix}, {Key: "$lt", Value: peerIDAfterAll}}},
		{Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: after}}},
	})
	if err != nil {
		return nil, err
	}
	var docs []peerDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	ps := make([]driver.Peer, 0, len(docs))
	for _, d := range docs {
		ps = append(ps, driver.Peer{ID: d.ID[len(peerIDPrefix):], Addr: d.Addr, ExpiresAt: d.ExpiresAt})
	}
	return ps, nil
}
