//go:build unix

package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestStatusOnlyReads: dsync status of a database whose lock collection
// exists (made here, empty) writes nothing there: it creates no other
// collection, no index and no document, as a user with MongoDB's read
// role must be able to run it. It used to make its Client prepare the
// store as for locking: create the lock index, upsert the clock document
// (creating the sessions collection) and insert the protocol document.
func TestStatusOnlyReads(t *testing.T) {
	t.Parallel()
	uri := mongotest.Shared(t).URI()
	name := mongotest.DatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), slow(time.Minute))
	defer cancel()
	db := mongotest.NewClient(t, uri).Database(name)
	if err := db.CreateCollection(ctx, "dsync_locks"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop(context.Background()) })

	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"status", "nightly"}} {
		r := runDsync(t, env(uri), "", slow(30*time.Second), append([]string{"--db", name}, args...)...)
		// A name nothing uses is an error (exit 1), after its reads.
		if r.code != 0 && (args[len(args)-1] != "nightly" || !strings.Contains(r.stderr, "nothing named")) {
			t.Fatalf("dsync %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"dsync_locks"}) {
		t.Errorf("after dsync status, the collections are %q; want only dsync_locks", names)
	}
	if n, err := db.Collection("dsync_locks").CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Errorf("after dsync status, dsync_locks holds %d documents (%v); want none", n, err)
	}
	specs, err := db.Collection("dsync_locks").Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 {
		t.Errorf("after dsync status, dsync_locks has %d indexes (%+v); want only _id's", len(specs), specs)
	}
}
