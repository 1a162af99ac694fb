//go:build unix

package main

// What dsync status reads: the store through a statuspage.Reader, the
// reader it shares with the status page, in the server's
// time. This file adds what only the command needs: the server's clock
// from clockcheck, and the Client and member store made from the
// command's flags. The Client's reads write nothing and create nothing
// (they need only MongoDB's read role), so status pointed at a database
// nothing uses (a mistyped --db, say) lists nothing and leaves it empty.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/dsync"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/statuspage"
)

// A statusStore is the store as dsync status reads it, open until close.
type statusStore struct {
	where     string           // the database and collection, for errors
	serverNow func() time.Time // the server's time
	within    time.Duration    // the uncertainty of serverNow
	// client and reader read the store.
	client *dsync.Client
	reader *statuspage.Reader
}

// openStatus measures the server's clock, and opens what reads g's
// collection in db, with the members seen within seen.
func openStatus(ctx context.Context, g *globals, db *mongo.Database, seen time.Duration) (*statusStore, error) {
	// The times shown are the server's, from hello, which needs no
	// privilege and writes nothing.
	sample, err := clockcheck.Measure(ctx, db, clockcheck.WithSamples(3))
	if err != nil {
		return nil, err
	}
	measured := time.Now()
	s := &statusStore{
		where: fmt.Sprintf("%s.%s", g.db, g.collection),
		// The server read its clock about half a round trip before the
		// reply.
		serverNow: func() time.Time { return sample.ServerTime.Add(sample.RTT/2 + time.Since(measured)) },
		within:    sample.Uncertainty,
	}
	// Status reports what it reads; the library's own warnings would only
	// interleave with the table.
	locks, store, err := g.lockClient(db, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		return nil, err
	}
	members, err := g.memberStore(store)
	if err != nil {
		locks.Close()
		return nil, err
	}
	s.client = locks
	s.reader = statuspage.NewReader(locks)
	s.reader.Members, s.reader.Seen, s.reader.Now, s.reader.MaxKeyLen = members, seen, s.serverNow, dsyncmongo.MaxKeyLen
	return s, nil
}

// close closes the Client that read.
func (s *statusStore) close() {
	if s.client != nil {
		s.client.Close()
	}
}

// read reads the locks and the elections that sel selects, and hands
// each to out as it is read. It returns the summary for out.done, which
// it does not call.
func (s *statusStore) read(ctx context.Context, sel selection, out statusSink) (statusSummary, error) {
	sum := statusSummary{within: s.within, sel: sel}
	var err error
	if sel.name != "" {
		sum.Listed, err = s.reader.WalkNamed(ctx, sel.name, out)
	} else {
		sum.Listed, err = s.reader.Walk(ctx, statuspage.Selection{Prefix: sel.prefix, After: sel.after, Limit: sel.limit}, out)
	}
	switch {
	case errors.Is(err, statuspage.ErrAfterUnsupported):
		return sum, err
	case err != nil:
		return sum, fmt.Errorf("reading %s: %w", s.where, err)
	}
	sum.now = s.serverNow()
	return sum, nil
}

// statusRecords are the records status reads before the locks: the
// sessions operators revoked (first, so that --json marks the revoked
// sessions' claims as it prints them), the stall records, the lock
// sets' wait notes and deadlock records, and the outages ridden through.
type statusRecords struct {
	revocations []statuspage.Revocation
	stalls      []statuspage.Stall
	sets        statuspage.SetRecords
	outages     []statuspage.Outage
}

// records reads the statusRecords.
func (s *statusStore) records(ctx context.Context) (statusRecords, error) {
	var r statusRecords
	var err error
	if r.revocations, err = s.reader.Revocations(ctx); err != nil {
		return r, err
	}
	if r.stalls, err = s.reader.Stalls(ctx); err != nil {
		return r, err
	}
	if r.sets, err = s.reader.SetRecords(ctx, s.serverNow().Add(-statuspage.DeadlocksShown)); err != nil {
		return r, err
	}
	r.outages, err = s.reader.Outages(ctx, s.serverNow().Add(-statuspage.OutagesShown))
	return r, err
}

// collectionExists reports whether db has the collection coll, so that
// the status page pointed at a database without one (a mistyped --db,
// say) says so rather than show an empty store. When the server does not
// say (a user without the listCollections privilege), it goes on and
// lets the Client read.
func collectionExists(ctx context.Context, db *mongo.Database, coll string) bool {
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll}})
	return err != nil || len(names) > 0
}
