package dsyncmongo

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"

	"github.com/go-dsync/dsync/dsync/internal/freshread"
)

// The reads of sessions (GetSession) and of the record of up-time
// (ReadUptime) are shared among the callers of one Store that ask at once
// (freshread): after an outage of the store every waiter of a process
// judges at the same moment, most of them the claims of one holder, each
// with a read of the record and of that holder's session, and FerretDB
// decodes the whole sessions collection for each (docs/contributing.md:
// the outage soak). A shared read answers only the callers that asked
// before it was sent: to each, it is its own read, slower, so each
// method keeps its contract (ReadUptime reads every write applied before
// a renewal acknowledged before the call).
type sharedReads struct {
	// sessions are GetSession's reads, by session ID: the documents
	// sessionDocsFilter selects.
	sessions freshread.Group[string, struct{}, []sessionDoc]
	// uptime are ReadUptime's: every session document, at majority read
	// concern, projected; each caller keeps what its since asks.
	uptime freshread.Group[struct{}, struct{}, []sessionDoc]
}

// sessionDocs returns the documents of session id (and of any session
// whose ID begins with it: the caller keeps its own, sessionGenOf).
func (ss *sessionStore) sessionDocs(ctx context.Context, id string) ([]sessionDoc, error) {
	return ss.shared.sessions.Do(ctx, id, struct{}{}, func(ctx context.Context, _ struct{}) ([]sessionDoc, error) {
		return ss.find(ctx, ss.coll, sessionDocsFilter(id), nil)
	})
}

// uptimeDocs returns every session document, projected to what the
// record of up-time needs, read at majority read concern (ReadUptime).
func (ss *sessionStore) uptimeDocs(ctx context.Context) ([]sessionDoc, error) {
	return ss.shared.uptime.Do(ctx, struct{}{}, struct{}{}, func(ctx context.Context, _ struct{}) ([]sessionDoc, error) {
		coll := ss.coll.Clone(options.Collection().SetReadConcern(readconcern.Majority()))
		// Session IDs are xids ([0-9a-v]); the other documents of the
		// collection (the clock's, peers', revocations', stall, wait,
		// deadlock and outage records') have _ids that begin with "#",
		// which sorts before "0".
		filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: "0"}}}}
		proj := bson.D{{Key: "expiresAt", Value: 1}, {Key: "seen", Value: 1}, {Key: "up", Value: 1}, {Key: "v", Value: 1}}
		return ss.find(ctx, coll, filter, options.Find().SetProjection(proj))
	})
}

// find reads the session documents filter selects from coll (the
// sessions collection, maybe with another read concern).
func (ss *sessionStore) find(ctx context.Context, coll *mongo.Collection, filter bson.D, opts *options.FindOptionsBuilder) ([]sessionDoc, error) {
	var o []options.Lister[options.FindOptions]
	if opts != nil {
		o = append(o, opts)
	}
	cur, err := coll.Find(ctx, filter, o...)
	if err != nil {
		ss.clock.noteFailure(err)
		return nil, err
	}
	var docs []sessionDoc
	if err := cur.All(ctx, &docs); err != nil {
		ss.clock.noteFailure(err)
		return nil, err
	}
	return docs, nil
}
