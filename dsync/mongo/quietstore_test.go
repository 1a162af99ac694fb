package dsyncmongo

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/dsync/driver"
)

// liveSession is the session the cleaning tests keep live beside the
// records and sessions they age: the cleaning must keep it.
const liveSession = "live0000000000000000"

// quietStore returns a prepared Store over db, closed at the test's
// end, and the store's time once prepared.
func quietStore(ctx context.Context, t *testing.T, db *mongo.Database) (*Store, time.Time) {
	t.Helper()
	st, err := NewStore(db, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	return st, st.ServerTime().Earliest
}

// storeWithLiveSession is quietStore with liveSession made, expiring a
// minute after now.
func storeWithLiveSession(ctx context.Context, t *testing.T, db *mongo.Database) (*Store, time.Time) {
	t.Helper()
	st, now := quietStore(ctx, t, db)
	if err := st.InsertSession(ctx, driver.Session{ID: liveSession, ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	return st, now
}
