package fencedb

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-dsync/dsync/fence/fencesql"
	"github.com/go-dsync/dsync/integration/fencedb/sqlserve"
)

func TestMain(m *testing.M) { sqlserve.Main(m) }

// each runs fn for every dialect, each with a new database holding the
// fence's table.
func each(t *testing.T, fn func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence)) {
	for _, d := range sqlserve.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			db, f := setup(t, d)
			fn(t, d, db, f)
		})
	}
}

func setup(tb testing.TB, d fencesql.Dialect) (*sql.DB, *fencesql.Fence) {
	tb.Helper()
	db := sqlserve.Open(tb, d)
	f, err := fencesql.New(d)
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.CreateTable(context.Background(), db); err != nil {
		tb.Fatal(err)
	}
	return db, f
}

// testCtx is a test's context, with a bound that only a hung test meets.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// markOf reads key's mark outside any fence, 0 if none.
func markOf(t *testing.T, db *sql.DB, d fencesql.Dialect, key string) uint64 {
	t.Helper()
	q := "SELECT mark FROM dsync_fence WHERE fence_key = ?"
	if d == fencesql.PostgreSQL {
		q = "SELECT mark FROM dsync_fence WHERE fence_key = $1"
	}
	var m int64
	err := db.QueryRow(q, []byte(key)).Scan(&m)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return uint64(m)
}

// lockWaiters counts the sessions of the server waiting for a lock
// (PostgreSQL: in db's database, row or advisory; MariaDB: any
// transaction in LOCK WAIT, any session in GET_LOCK).
// SQLite tells no one: -1.
func lockWaiters(t *testing.T, db *sql.DB, d fencesql.Dialect) int {
	t.Helper()
	var q string
	switch d {
	case fencesql.PostgreSQL:
		q = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
	case fencesql.MySQL:
		// Row locks, and named locks (GET_LOCK: Marks' turns).
		q = "SELECT (SELECT count(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT') + " +
			"(SELECT count(*) FROM information_schema.processlist WHERE state = 'User lock')"
	default:
		return -1
	}
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitLockWaiters waits until n sessions wait for a row lock; on SQLite,
// where none tells, it returns at once. It fails the test if done, the
// result of the transaction expected to wait, comes first.
func waitLockWaiters(t *testing.T, ctx context.Context, db *sql.DB, d fencesql.Dialect, n int, done <-chan error) {
	t.Helper()
	for {
		if d == fencesql.MySQL {
			// InnoDB refreshes information_schema.innodb_trx only when
			// it was not read for 100 ms: read sooner, it shows what it
			// showed before.
			time.Sleep(150 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("the transaction that should wait for the lock ended first: %v", err)
		default:
		}
		got := lockWaiters(t, db, d)
		if got < 0 || got == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%d sessions wait for a row lock, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sqliteWriteLocked reports whether another connection holds the SQLite
// database's write lock: BEGIN IMMEDIATE on a connection of its own,
// with no busy timeout, fails at once then.
func sqliteWriteLocked(t *testing.T, ctx context.Context, db *sql.DB) bool {
	t.Helper()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(ctx, "PRAGMA busy_timeout = 30000")
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return true
	}
	if _, err := c.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	return false
}

// checkTx begins a transaction and runs Check in it; the transaction is
// rolled back at the end of the test if the test does not end it.
func checkTx(t *testing.T, ctx context.Context, db *sql.DB, f *fencesql.Fence, key string, token uint64) (*sql.Tx, error) {
	t.Helper()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	return tx, f.Check(ctx, tx, key, token)
}

// commitCheck checks key under token in a transaction of its own and
// commits, returning Check's error.
func commitCheck(t *testing.T, ctx context.Context, db *sql.DB, f *fencesql.Fence, key string, token uint64) error {
	t.Helper()
	tx, err := checkTx(t, ctx, db, f, key, token)
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return nil
}
