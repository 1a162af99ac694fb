package mongotest

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// A replica set's primary election, for the tests that ride one through
// (a stepdown under load): they run where the test server is a replica
// set (MONGODB_URI, or the workflow's replset job), and skip elsewhere.

// SkipUnlessReplicaSet skips t, a test that steps a primary down, unless
// c is connected to a replica set (FerretDB and a standalone server have
// no election to hold), saying where such a test runs.
func SkipUnlessReplicaSet(t testing.TB, ctx context.Context, c *mongo.Client) {
	t.Helper()
	hello, err := Hello(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if hello["setName"] == nil {
		t.Skip("needs a MongoDB replica set to step down (CI's replset job; here, MONGODB_URI of one, " +
			"or Docker with DSYNC_MONGOTEST_TOPOLOGY=replset): the test server is not a replica set")
	}
}

// StepDown has the primary of c's replica set step down (replSetStepDown,
// forced, for 10 s), and waits until another member is primary.
func StepDown(t testing.TB, ctx context.Context, c *mongo.Client) {
	t.Helper()
	before, err := Hello(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// The primary closes its connections as it steps down: the command's
	// reply may be a network error.
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetStepDown", Value: 10}, {Key: "force", Value: true}}).Err()
	if err != nil && !mongo.IsNetworkError(err) && !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("replSetStepDown: %v", err)
	}
	for {
		h, err := Hello(ctx, c)
		if err == nil && h["primary"] != nil && h["primary"] != before["primary"] {
			t.Logf("primary %v → %v", before["primary"], h["primary"])
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no new primary after the stepdown of %v: %v", before["primary"], ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
