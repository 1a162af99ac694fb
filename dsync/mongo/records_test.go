package dsyncmongo

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestRecordsLiveApartFromSessions: a stall record, a wait note, a
// deadlock record and an outage record land in the records collection,
// and the sessions collection holds only the session (and the server-time
// samples' document): the reads of sessions, which FerretDB answers by
// decoding that whole collection, do not pay for a day of records.
func TestRecordsLiveApartFromSessions(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	st, now := storeWithLiveSession(ctx, t, mongotest.NewDatabase(t))
	const session = liveSession
	r := st.Roles()
	if err := r.Stalls.RecordStall(ctx, driver.Stall{Key: "k", Token: 1, Session: session, Nonce: "n", At: now}); err != nil {
		t.Fatal(err)
	}
	if err := r.Waits.PutWait(ctx, driver.Wait{Set: "set", N: 1, Key: "k", Epoch: 2, Nonce: "w", Session: session, At: now}); err != nil {
		t.Fatal(err)
	}
	if err := r.Deadlocks.PutDeadlock(ctx, driver.Deadlock{Victim: "set", N: 1, Session: session, At: now}); err != nil {
		t.Fatal(err)
	}
	if err := r.Outages.RecordOutage(ctx, driver.Outage{Session: session, Suspended: now.Add(-time.Minute), Resumed: now, Holds: 1, At: now}); err != nil {
		t.Fatal(err)
	}
	if got := ids(ctx, t, st.sessions.coll); !slices.Equal(got, []string{clockID, session}) {
		t.Errorf("the sessions collection holds %q; want only %q", got, []string{clockID, session})
	}
	if got := ids(ctx, t, st.records.coll); len(got) != 4 {
		t.Errorf("the records collection holds %q; want the four records", got)
	}
	if os, err := r.Outages.ListOutages(ctx, time.Time{}); err != nil || len(os) != 1 {
		t.Errorf("ListOutages = %+v, %v; want the one record", os, err)
	}
}

// TestCleanDeletesRecordsOfTheSessionsCollection: an earlier release kept
// the records in the sessions collection, under the same _ids; the
// cleaning deletes those past their retention there too, and keeps the
// others and the live session.
func TestCleanDeletesRecordsOfTheSessionsCollection(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	st, now := storeWithLiveSession(ctx, t, mongotest.NewDatabase(t))
	const session = liveSession
	old, fresh := now.Add(-outageRetention-time.Minute), now
	docs := []any{
		outageDoc{ID: outageID(session, old), Session: session, Suspended: old, Resumed: old, At: old},
		outageDoc{ID: outageID(session, fresh), Session: session, Suspended: fresh, Resumed: fresh, At: fresh},
		stallDoc{ID: stallID(session, "old"), Session: session, Nonce: "old", At: now.Add(-stallRetention - time.Minute)},
		toWaitDoc(driver.Wait{Set: "set", N: 1, Session: session, At: now.Add(-waitRetention - time.Minute)}),
	}
	if _, err := st.sessions.coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	st.clean(ctx)
	want := []string{outageID(session, fresh), clockID, session}
	slices.Sort(want)
	if got := ids(ctx, t, st.sessions.coll); !slices.Equal(got, want) {
		t.Errorf("the sessions collection holds %q after the cleaning; want %q", got, want)
	}
}

// ids returns the sorted _ids of coll's documents.
func ids(ctx context.Context, t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	slices.Sort(out)
	return out
}
