//go:build unix

package mongotest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/internal/testbed/longtest"
	"github.com/go-dsync/dsync/internal/testbed/pgserve"
)

// startPostgresChild starts a FerretDB child over a database of its own on
// the test binary's PostgreSQL, whatever DSYNC_MONGOTEST_BACKEND says, and
// returns it with the database's name. The test is skipped where
// PostgreSQL is not installed.
func startPostgresChild(t *testing.T) (*postgres, string, *child) {
	t.Helper()
	if _, err := pgserve.BinDir(); err != nil {
		t.Skip(err)
	}
	pg, err := sharedPostgres()
	if err != nil {
		t.Fatal(err)
	}
	pgdb, err := pg.NewDatabase("ferretdb")
	if err != nil {
		t.Fatal(err)
	}
	pgURL := pg.URL(pgdb)
	base := t.TempDir()
	c, err := startChild(filepath.Join(base, "data"), "127.0.0.1:0", pgURL, filepath.Join(base, "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.stop(15 * time.Second) })
	return pg, pgdb, c
}

// TestPostgreSQLPointReadsUseAnIndex: on FerretDB's PostgreSQL backend, a
// find by _id sent through FerretDB is answered from an index, not by
// reading the table, once the server has indexed the collection: the
// index the server adds (internal/ferretserve, pgindex.go) counts the
// finds. FerretDB's own _id index cannot serve them (its query tests
// containment, which a B-tree index does not answer), so without the
// added index the count never moves.
func TestPostgreSQLPointReadsUseAnIndex(t *testing.T) {
	longtest.Skip(t) // it starts a PostgreSQL of its own and loads it
	pg, pgdb, c := startPostgresChild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := NewClient(t, c.uri)
	coll := client.Database("points").Collection("c")
	// Enough documents that reading the table costs more than the
	// index: PostgreSQL reads a table of a few pages whole.
	var docs []any
	for i := range 2000 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("k%04d", i)}, {Key: "n", Value: i}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	// The index on the collection's table, and the scans it served.
	const scans = `SELECT coalesce(sum(idx_scan), -1) FROM pg_stat_user_indexes
		WHERE schemaname = 'points' AND indexrelname LIKE 'dsync\_id\_%'`
	count := func() int {
		out, err := pg.Query(pgdb, scans)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(out)
		if err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		return n
	}
	for n := count(); n < 0; n = count() { // the server indexes every pollInterval
		if ctx.Err() != nil {
			t.Fatal("the collection's table never got the _id index")
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := count()
	// More finds than PostgreSQL's five custom plans before it weighs a
	// generic one, hits and misses.
	const finds = 20
	for i := range finds {
		id := fmt.Sprintf("k%04d", i*100)
		if i%2 == 1 {
			id = "missing"
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err(); err != nil && id != "missing" {
			t.Fatal(err)
		}
	}
	// Statistics reach the view within a second or so of the queries.
	for n := count(); n-before < finds; n = count() {
		if ctx.Err() != nil {
			t.Fatalf("the _id index served %d of %d finds by _id", n-before, finds)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
