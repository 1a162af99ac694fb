package dsyncmongo

import (
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestTwoFerretDBFrontEnds: processes that reach one PostgreSQL database
// through two FerretDB processes take one key in turns, never two inside
// at once, once dsync's collections were made through the first before
// the second started, as docs/deployments.md ("FerretDB on PostgreSQL")
// says they must be: FerretDB 1.24 reads a database's collections once,
// when a process first uses it. Only with DSYNC_MONGOTEST_BACKEND=postgresql.
func TestTwoFerretDBFrontEnds(t *testing.T) {
	if mongotest.Shared(t).Backend() != mongotest.BackendPostgreSQL {
		t.Skip("needs the embedded FerretDB on PostgreSQL (DSYNC_MONGOTEST_BACKEND=postgresql)")
	}
	opts := []any{dsync.ClientWithPollInterval(hammerPoll), dsync.ClientWithSafetyPoll(2 * time.Second)}
	first := newProcs(t, 1, opts...)[0]
	ctx := testCtx(t, time.Minute)

	// Every collection the hammer uses, made through the first front end.
	m := newMutex(t, first.b.Client, "hammer")
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := first.db.Collection("counter").InsertOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"counter", "dsync_locks", "dsync_locks_events", "dsync_locks_keys", "dsync_locks_sessions"}
	for { // the directory of keys is written in the background
		names, err := first.db.ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if slices.Equal(names, want) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("collections %v, want %v", names, want)
		}
		time.Sleep(50 * time.Millisecond)
	}

	second := mongotest.StartFrontEnd(t)
	ps := []*proc{first}
	for range 3 {
		c := &counter{}
		db := mongotest.NewClient(t, second, c.monitor()).Database(first.db.Name())
		ps = append(ps, &proc{db: db, b: newBackend(t, db, opts...), cmd: c})
	}
	hammerProcs(t, ps, 15)
}
