package ferretserve

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The SQLite driver FerretDB 1.24 was built with (modernc.org/sqlite
// v1.31.1) drops the rows of a query whose context ends just after its
// first step, without finalizing the statement, and interrupts the
// connection. The connection goes back to database/sql's pool with a
// statement that never ends: until the interrupt lands, reads on it see
// the database as it was when the statement started and writes fail with
// SQLITE_BUSY_SNAPSHOT (517); once it lands, every statement on it fails
// with "interrupted (9)", for as long as the server runs. This module
// requires a driver that closes those rows (v1.59.0 or later); these two
// tests fail with v1.31.1.

// TestCancelledQueryKeepsConnectionUsable: the driver itself. One
// connection, queries whose contexts end at every moment of their run, and
// after each a count on the same connection, which must succeed and see a
// row inserted through another connection just before.
func TestCancelledQueryKeepsConnectionUsable(t *testing.T) {
	uri := "file:" + filepath.Join(t.TempDir(), "t.sqlite") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)"
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // every statement below runs on the connection under test
	other, err := sql.Open("sqlite", uri)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	rows := 0
	cancelled := 0
	for i := range 5000 {
		if i%100 == 0 {
			if _, err := other.Exec(`INSERT INTO t VALUES (?)`, i); err != nil {
				t.Fatal(err)
			}
			rows++
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Duration(i%50) * time.Microsecond)
			cancel()
		}()
		if r, err := db.QueryContext(ctx, `SELECT x FROM t`); err != nil {
			cancelled++
		} else {
			for r.Next() {
			}
			_ = r.Close()
		}
		cancel()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
			t.Fatalf("query %d (after %d cancelled): the next statement on the connection failed: %v", i, cancelled, err)
		}
		if n != rows {
			t.Fatalf("query %d (after %d cancelled): the connection counts %d rows, %d were inserted: a stale read", i, cancelled, n, rows)
		}
	}
	if cancelled == 0 {
		t.Fatal("no query was cancelled: the test did not exercise the driver's cancellation")
	}
	t.Logf("%d of 5000 queries cancelled", cancelled)
}

// TestClientTimeoutsLeaveServerUsable: the same through FerretDB. Clients
// give up on point reads and counts after 0.2–3 ms (the driver closes the
// connection, FerretDB cancels the query) while one client inserts; then
// every count with time to spare must succeed and see every insert.
// With v1.31.1, after a few seconds each count failed with "interrupted".
func TestClientTimeoutsLeaveServerUsable(t *testing.T) {
	ctx := context.Background()
	coll := startClient(t, t.TempDir()).Database("timeouts").Collection("c")
	var inserted atomic.Int64
	for i := range 100 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("seed%d", i)}}); err != nil {
			t.Fatal(err)
		}
		inserted.Add(1)
	}

	stop := time.Now().Add(8 * time.Second)
	var wg sync.WaitGroup
	var gaveUp atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				d := time.Duration(200+(i*37+g*101)%3000) * time.Microsecond
				cctx, cancel := context.WithTimeout(ctx, d)
				var err error
				if i%2 == 0 {
					_, err = coll.CountDocuments(cctx, bson.D{})
				} else {
					err = coll.FindOne(cctx, bson.D{{Key: "_id", Value: fmt.Sprintf("seed%d", i%100)}}).Err()
				}
				cancel()
				if err != nil {
					gaveUp.Add(1)
				}
			}
		})
	}
	var insertErr error
	wg.Go(func() {
		for i := 0; time.Now().Before(stop); i++ {
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			_, err := coll.InsertOne(cctx, bson.D{{Key: "_id", Value: fmt.Sprintf("w%d", i)}})
			cancel()
			if err != nil {
				insertErr = err
				return
			}
			inserted.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	})
	wg.Wait()
	if insertErr != nil {
		t.Errorf("an insert with 15 s to spare failed: %v", insertErr)
	}
	if gaveUp.Load() == 0 {
		t.Fatal("no client gave up: the test did not exercise cancelled queries")
	}
	for i := range 20 {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		n, err := coll.CountDocuments(cctx, bson.D{})
		cancel()
		if err != nil || n != inserted.Load() {
			t.Fatalf("count %d after the timeouts: %d documents (%d inserted), error %v", i, n, inserted.Load(), err)
		}
	}
	t.Logf("%d reads given up by their clients, %d documents inserted", gaveUp.Load(), inserted.Load())
}
