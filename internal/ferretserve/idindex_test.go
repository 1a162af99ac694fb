package ferretserve

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestPointReadsUseAnIndex: the plan FerretDB reports for a find by _id
// searches an index instead of scanning the table, once the indexer has
// seen the collection. Without idIndexer, the plan is "SCAN". (FerretDB's
// explain command reports SCAN either way, so the test asks SQLite.)
func TestPointReadsUseAnIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db := startClient(t, dir).Database("idindex")
	var docs []any
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("k%03d", i)}, {Key: "n", Value: i}})
	}
	if _, err := db.Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	// The query FerretDB sends for a find by _id (its sqlite backend's
	// collection.Query), planned by SQLite on the server's data file.
	plan := func() string {
		sdb, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "idindex.sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		defer sdb.Close()
		var table string
		if err := sdb.QueryRow(`SELECT table_name FROM _ferretdb_collections WHERE name = 'c'`).Scan(&table); err != nil {
			t.Fatal(err)
		}
		var id, parent, notused int
		var detail string
		q := fmt.Sprintf(`EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM %q WHERE _ferretdb_sjson->'$._id' = ?`, table)
		if err := sdb.QueryRow(q, `"k099"`).Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		return detail
	}
	// The indexer looks every pollInterval; give it many.
	deadline := time.Now().Add(100 * pollInterval)
	p := plan()
	for !strings.Contains(p, idIndexSuffix) && time.Now().Before(deadline) {
		time.Sleep(pollInterval / 2)
		p = plan()
	}
	if !strings.Contains(p, "USING INDEX") || !strings.Contains(p, idIndexSuffix) {
		t.Fatalf("a find by _id is planned as %q, not a search of the %s index", p, idIndexSuffix)
	}

	// The index changes no answer: a hit, a miss, and a duplicate insert.
	var got bson.M
	if err := db.Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: "k042"}}).Decode(&got); err != nil || got["n"] != int32(42) {
		t.Fatalf("find k042: %v, %v", got, err)
	}
	if err := db.Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: "nope"}}).Err(); err != mongo.ErrNoDocuments {
		t.Fatalf("find of a missing _id: %v", err)
	}
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "k001"}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a duplicate insert: %v, want a duplicate key error", err)
	}

	// A collection dropped and created again is indexed again.
	if err := db.Collection("c").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(100 * pollInterval)
	for p = plan(); !strings.Contains(p, idIndexSuffix) && time.Now().Before(deadline); p = plan() {
		time.Sleep(pollInterval / 2)
	}
	if !strings.Contains(p, idIndexSuffix) {
		t.Fatalf("after a drop, a find by _id is planned as %s", p)
	}
}

// TestDatabaseCreatedBesideIndexer: FerretDB creates a database's file
// and switches it to WAL while the indexer may open the same new file.
// Creating databases while indexer passes run without pause must never
// fail (it failed with SQLITE_BUSY, "database is locked", when the
// indexer's connection also asked for WAL on the new file: two
// connections each holding a read lock and asking for the write lock,
// and SQLite fails one at once rather than wait).
func TestDatabaseCreatedBesideIndexer(t *testing.T) {
	dir := t.TempDir()
	c := startClient(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 150 // meets the race in most runs; the long form (DSYNC_LONG=1) in nearly all
	if long, _ := strconv.ParseBool(os.Getenv("DSYNC_LONG")); long && !testing.Short() {
		n = 400
	}
	for i := range n {
		name := fmt.Sprintf("d%03d", i)
		file := filepath.Join(dir, name+".sqlite")
		done := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() { // an indexer pass that meets the file as it appears
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					if _, err := os.Stat(file); err == nil {
						_ = indexFile(ctx, file)
					}
				}
			}()
		}
		err := c.Database(name).CreateCollection(ctx, "c")
		close(done)
		wg.Wait()
		if err != nil {
			t.Fatalf("creating database %d beside the indexer: %v", i, err)
		}
	}
}
