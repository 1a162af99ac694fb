package leadermongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A member's writes: one at a time, each to the generation the last one
// left usable (see the package documentation).

// memberWriter is what the store knows of one member's documents. Its
// writes hold sem, so they are sent one at a time, each after the last
// one's reply.
type memberWriter struct {
	sem chan struct{}
	// gen is the _id of the generation writes go to, genSeq the number
	// in it; gen is empty before the member's first write, and after an
	// update of gen failed or matched nothing.
	gen    string
	genSeq int64
	// exists: an insert of gen is confirmed (or answered duplicate key),
	// and every write to it since has been confirmed, so no write to gen
	// can be in flight but an insert, which cannot land over it: the next
	// write may update it. Otherwise the next write inserts gen.
	exists bool
	// older: documents of generations before gen may exist.
	older bool
	// seen is the highest LastSeen sent, so that a later write never
	// carries an earlier stamp, even when the server-time estimate's
	// upper bound moves back.
	seen time.Time
}

// writer returns member key's writer, holding its sem, or the cause of
// ctx if ctx ends first. Release it with release.
func (b *Store) writer(ctx context.Context, key string) (*memberWriter, error) {
	for {
		b.writersMu.Lock()
		w := b.writers[key]
		if w == nil {
			w = &memberWriter{sem: make(chan struct{}, 1)}
			b.writers[key] = w
		}
		b.writersMu.Unlock()
		select {
		case w.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		b.writersMu.Lock()
		current := b.writers[key] == w
		b.writersMu.Unlock()
		if current {
			return w, nil
		}
		<-w.sem // DeleteMember dropped it meanwhile
	}
}

func (w *memberWriter) release() { <-w.sem }

// errNoMatch: an update matched no document (it was deleted).
var errNoMatch = errors.New("member document not found")

// updateMember writes d over generation gen. Only PutMember calls it,
// holding the member's sem, when every earlier write to gen has been
// answered (or, an insert, cannot land over it): so updates of gen land in
// the order they were sent, and it filters on _id alone, which FerretDB
// answers without decoding the whole collection.
func (b *Store) updateMember(ctx context.Context, gen string, d *memberDoc) error {
	res, err := b.members.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: gen}},
		bson.D{
			{Key: "$set", Value: bson.D{
				{Key: "host", Value: d.Host},
				{Key: "pid", Value: d.PID},
				{Key: "version", Value: d.Version},
				{Key: "priority", Value: d.Priority},
				{Key: "leader", Value: d.Leader},
				{Key: "seq", Value: d.Seq},
				{Key: "value", Value: d.Value},
				{Key: "term", Value: d.Term},
				{Key: "proclaimed", Value: d.Proclaimed},
				{Key: "rev", Value: d.Rev},
				{Key: "handoverTo", Value: d.HandoverTo},
				{Key: "handoverTerm", Value: d.HandoverTerm},
			}},
			{Key: "$max", Value: bson.D{{Key: "lastSeen", Value: d.LastSeen}}},
		})
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return errNoMatch
	}
	return nil
}

// deleteOlder removes the member's documents of generations before its
// current one, once a write to that one is confirmed. Harmless whenever it
// lands: every document of the current or a later generation has a Seq of
// at least the current one's number. A failure is left for the member's
// next write to try again.
func (b *Store) deleteOlder(ctx context.Context, election, id string, w *memberWriter) {
	if !w.older {
		return
	}
	filter := append(memberFilter(election, id), bson.E{Key: "seq", Value: bson.D{{Key: "$lt", Value: w.genSeq}}})
	if _, err := b.members.DeleteMany(ctx, filter); err == nil {
		w.older = false
	}
}
