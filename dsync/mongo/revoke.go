package dsyncmongo

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync/driver"
)

// Revocations (driver.RevokeStore), kept in the sessions collection
// beside the sessions under _ids "#revoke/<session>" (a session's _ids
// are xids, which never begin with "#"). A record is inserted once and
// never updated, so no renewal can erase it, even on FerretDB, which
// applies an update as a read and a later write. It has no expiresAt:
// the cleaning of expired sessions never selects it; cleanRevocations
// deletes it once its session can no longer act (below).

const (
	revokeIDPrefix   = "#revoke/"
	revokeIDAfterAll = "#revoke0" // '0' follows '/': the end of the prefix's range
)

// revokeDoc is a revocation's document.
type revokeDoc struct {
	ID     string    `bson:"_id"`
	By     string    `bson:"by"`
	Reason string    `bson:"reason"`
	At     time.Time `bson:"at"`
}

// revocation is the record d holds: its session is d's _id without the
// prefix.
func (d revokeDoc) revocation() driver.Revocation {
	return driver.Revocation{Session: strings.TrimPrefix(d.ID, revokeIDPrefix), By: d.By, Reason: d.Reason, At: d.At}
}

// Revoke implements driver.RevokeStore: one insert of the record, and
// no other write. It never writes a session's documents: on FerretDB an
// update is a read and a later whole-document write, so a revoke's write
// could land after a renewal its owner already counted and put back the
// older expiresAt (two holders). The owner reads the record (Revoked).
func (ss *sessionStore) Revoke(ctx context.Context, r driver.Revocation) error {
	if _, err := ss.prepare(ctx); err != nil {
		return err
	}
	err := ss.writer.write(ctx, "revoke", func(ctx context.Context) error {
		_, err := ss.coll.InsertOne(ctx, revokeDoc{ID: revokeIDPrefix + r.Session, By: r.By, Reason: r.Reason, At: r.At})
		return err
	})
	if mongo.IsDuplicateKeyError(err) {
		return driver.ErrExists
	}
	return err
}

// Revoked implements driver.RevokeStore: one find by _id.
func (ss *sessionStore) Revoked(ctx context.Context, session string) (driver.Revocation, bool, error) {
	var d revokeDoc
	err := ss.coll.FindOne(ctx, bson.D{{Key: "_id", Value: revokeIDPrefix + session}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return driver.Revocation{}, false, nil
	}
	if err != nil {
		ss.clock.noteFailure(err)
		return driver.Revocation{}, false, err
	}
	return d.revocation(), true, nil
}

// Revocations implements driver.RevokeStore: one find on the range of
// revocations' _ids. It does not prepare the store: a read must not
// create the collections (dsync status of an empty database).
func (ss *sessionStore) Revocations(ctx context.Context) ([]driver.Revocation, error) {
	cur, err := ss.coll.Find(ctx, bson.D{
		{Key: "_id", Value: bson.D{{Key: "$gt", Value: revokeIDPrefix}, {Key: "$lt", Value: revokeIDAfterAll}}},
	})
	if err != nil {
		return nil, err
	}
	var docs []revokeDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	rs := make([]driver.Revocation, 0, len(docs))
	for _, d := range docs {
		rs = append(rs, d.revocation())
	}
	return rs, nil
}

// A revocation's end. A record matters while its session may still act:
// its owner reads it only while it keeps the session, and keeps the
// session only until its local deadline, which comes before the expiry
// its last confirmed renewal stored (stored expiries only grow). So once
// every document of the session has expired in store time, the owner has
// retired the session, or will before it acts again (a paused owner
// checks its deadline first), and no renewal it sent can make it keep
// the session: the record can no longer change what anyone does.
// cleanRevocations deletes a record only well past that point, by the
// rule that deletes the session documents themselves (sessionStore.clean): the
// record was sent more than sessionRetention ago in store time, and no
// document of its session expires later than sessionRetention ago. A
// session whose documents were deleted so (or that never had any) has
// none. Until then dsync status and the status page list the record.

// cleanRevocations deletes the revocations that can no longer matter
// (above), judged against before: the earliest server time now, less
// sessionRetention. Best effort, one read of the records, then one read
// of a candidate's session and one delete by _id each; a delete that
// lands late deletes a record that could no longer matter, or nothing.
func (ss *sessionStore) cleanRevocations(ctx context.Context, before time.Time) {
	rs, err := ss.Revocations(ctx)
	if err != nil {
		ss.cfg.logger.Debug("dsyncmongo: reading revocations to clean failed", "err", err)
		return
	}
	for _, r := range rs {
		if !r.At.Before(before) {
			continue
		}
		sess, found, err := ss.GetSession(ctx, r.Session)
		if err == nil && found && !sess.ExpiresAt.Before(before) {
			continue // the session may still act: keep the record
		}
		if err == nil {
			_, err = ss.writer.deleteByID(ctx, ss.coll, "clean revocations", []any{revokeIDPrefix + r.Session})
		}
		if err != nil {
			ss.cfg.logger.Debug("dsyncmongo: deleting a revocation that can no longer matter failed", "session", r.Session, "err", err)
			return
		}
	}
}
