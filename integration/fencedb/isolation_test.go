package fencedb

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencesql"
)

// TestCheckUnderRepeatableRead: a transaction at REPEATABLE READ whose
// Check waits for another's lock, which then commits a raise and a
// write. On PostgreSQL its Check fails with a serialization error
// (SQLSTATE 40001), nothing written. On MariaDB it goes on, and its
// reads after Check see the other's write: InnoDB's locking statement
// acts on the latest committed row, and the snapshot is taken at the
// first plain read, after it.
func TestCheckUnderRepeatableRead(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite has one isolation level, serializable")
		}
		ctx := testCtx(t)
		if _, err := db.Exec("CREATE TABLE reg (k INT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO reg VALUES (1, 0)"); err != nil {
			t.Fatal(err)
		}
		if err := commitCheck(t, ctx, db, f, "k", 1); err != nil {
			t.Fatal(err)
		}
		tx1, err := checkTx(t, ctx, db, f, "k", 6)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx1.Exec("UPDATE reg SET v = 6 WHERE k = 1"); err != nil {
			t.Fatal(err)
		}
		type result struct {
			err error
			v   int64
		}
		res := make(chan result, 1)
		done := make(chan error, 1) // for waitLockWaiters: stays empty
		go func() {
			tx2, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
			if err != nil {
				res <- result{err: err}
				return
			}
			defer tx2.Rollback()
			if err := f.Check(ctx, tx2, "k", 7); err != nil {
				res <- result{err: err}
				return
			}
			var v int64
			err = tx2.QueryRow("SELECT v FROM reg WHERE k = 1").Scan(&v)
			if err == nil {
				err = tx2.Commit()
			}
			res <- result{err, v}
		}()
		waitLockWaiters(t, ctx, db, d, 1, done)
		if err := tx1.Commit(); err != nil {
			t.Fatal(err)
		}
		r := <-res
		switch d {
		case fencesql.PostgreSQL:
			if r.err == nil || !strings.Contains(r.err.Error(), "40001") {
				t.Fatalf("Check at REPEATABLE READ after a concurrent raise: %v, want a serialization error (40001)", r.err)
			}
			if errors.Is(r.err, fence.ErrStale) {
				t.Fatalf("a serialization error taken for a refusal: %v", r.err)
			}
			if m := markOf(t, db, d, "k"); m != 6 {
				t.Fatalf("mark %d, want 6", m)
			}
		case fencesql.MySQL:
			if r.err != nil || r.v != 6 {
				t.Fatalf("Check at REPEATABLE READ after a concurrent raise: %v, read %d; want nil, and the other's write 6", r.err, r.v)
			}
			if m := markOf(t, db, d, "k"); m != 7 {
				t.Fatalf("mark %d, want 7", m)
			}
		}
	})
}
