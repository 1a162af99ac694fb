package fencedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencesql"
	"github.com/go-dsync/dsync/integration/fencedb/sqlserve"
)

// TestMarksAdmit: Admit raises the mark and commits it before it
// returns; a second Admit of the key waits until release, and then is
// admitted under a later token; an earlier token is refused with the
// mark; release twice is once.
func TestMarksAdmit(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		ctx := testCtx(t)
		m := marks(t, f, db)
		rel5, err := m.Admit(ctx, "k", 5)
		if err != nil {
			t.Fatal(err)
		}
		if got := markOf(t, db, d, "k"); got != 5 {
			t.Fatalf("mark %d while admitted under 5, want 5 committed", got)
		}
		if d == fencesql.SQLite && sqliteWriteLocked(t, ctx, db) {
			t.Fatal("while admitted, Marks holds SQLite's write lock: the writer cannot write to the database")
		}
		done := make(chan error, 1)
		var rel6 func()
		go func() {
			var err error
			rel6, err = m.Admit(ctx, "k", 6)
			done <- err
		}()
		waitLockWaiters(t, ctx, db, d, 1, done)
		rel5()
		rel5() // a no-op
		if err := <-done; err != nil {
			t.Fatalf("Admit(6) after 5's release: %v", err)
		}
		rel6()
		_, err = m.Admit(ctx, "k", 5)
		var se *fence.StaleError
		if !errors.As(err, &se) || se.Mark != 6 || se.Token != 5 || se.Key != "k" {
			t.Fatalf("Admit(5) after 6: %v, want a StaleError with mark 6", err)
		}
		if got := markOf(t, db, d, "k"); got != 6 {
			t.Fatalf("mark %d after a refusal, want 6", got)
		}
		rel, err := m.Admit(ctx, "k", 6) // the same token again
		if err != nil {
			t.Fatal(err)
		}
		rel()
	})
}

// TestMarksAdmitWaitsThenRefuses: an Admit whose key's row is locked by
// a transaction that raised the mark to a later token waits for it at
// its first step, and is refused once that transaction commits.
func TestMarksAdmitWaitsThenRefuses(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite tells no one that a connection waits for its write lock")
		}
		ctx := testCtx(t)
		m := marks(t, f, db)
		// 7 holds the lock in a transaction of the test's own that
		// raised the mark, as Admit's second step would, without
		// committing: 6's first step waits.
		tx, err := checkTx(t, ctx, db, f, "k", 7)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			rel, err := m.Admit(ctx, "k", 6)
			if err == nil {
				rel()
			}
			done <- err
		}()
		waitLockWaiters(t, ctx, db, d, 1, done)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, fence.ErrStale) {
			t.Fatalf("Admit(6) behind 7: %v, want ErrStale", err)
		}
	})
}

// TestMarksSafeWhenReleaseFails: the admitted writer's connection is
// lost before release (the server ends its session), so release's end
// of the transaction fails. The mark stays raised, because Admit
// committed it before it admitted: an earlier token is still refused,
// and the lock is free.
func TestMarksSafeWhenReleaseFails(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite runs in the process: there is no session to lose")
		}
		ctx := testCtx(t)
		mdb := sqlOpenLike(t, d, db) // the Marks' pool, apart from the probe's
		m := marks(t, f, mdb)
		rel, err := m.Admit(ctx, "k", 5)
		if err != nil {
			t.Fatal(err)
		}
		killAdmitted(t, ctx, db, d)
		rel() // its rollback fails: the session is gone
		if got := markOf(t, db, d, "k"); got != 5 {
			t.Fatalf("mark %d after the admitted session was lost, want 5", got)
		}
		if _, err := admitRetry(ctx, m, "k", 4); !errors.Is(err, fence.ErrStale) {
			t.Fatalf("Admit(4) after 5's lost session: %v, want ErrStale", err)
		}
		rel, err = admitRetry(ctx, m, "k", 5)
		if err != nil {
			t.Fatalf("Admit(5) after its lost session: %v", err)
		}
		rel()
	})
}

// admitRetry admits, trying again after an error that is not a refusal:
// the pool may hand out a connection the server ended (the driver finds
// out on use).
// marks is f's Marks on db with opts, failing tb if they are refused.
func marks(tb testing.TB, f *fencesql.Fence, db *sql.DB, opts ...fencesql.MarksOption) fence.Marks {
	tb.Helper()
	m, err := f.Marks(db, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func admitRetry(ctx context.Context, m fence.Marks, key string, token uint64) (func(), error) {
	for try := 0; ; try++ {
		rel, err := m.Admit(ctx, key, token)
		if err == nil || errors.Is(err, fence.ErrStale) || try == 3 {
			return rel, err
		}
	}
}

// sqlOpenLike opens a second pool on db's database.
func sqlOpenLike(t *testing.T, d fencesql.Dialect, db *sql.DB) *sql.DB {
	t.Helper()
	var name, q string
	switch d {
	case fencesql.PostgreSQL:
		name, q = "pgx", "SELECT 'postgres://dsync@127.0.0.1:' || current_setting('port') || '/' || current_database()"
	case fencesql.MySQL:
		name, q = "mysql", "SELECT concat('root@tcp(127.0.0.1:', @@port, ')/', database())"
	}
	var dsn string
	if err := db.QueryRow(q).Scan(&dsn); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	sqlserve.KeepIdle(other)
	t.Cleanup(func() { other.Close() })
	return other
}

// killAdmitted ends, from the server's side, the session of the one
// transaction left open in db's database: the admitted writer's.
func killAdmitted(t *testing.T, ctx context.Context, db *sql.DB, d fencesql.Dialect) {
	t.Helper()
	var n int
	switch d {
	case fencesql.PostgreSQL:
		err := db.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
	case fencesql.MySQL:
		time.Sleep(150 * time.Millisecond) // innodb_trx shows what it showed unless unread for 100 ms
		rows, err := db.QueryContext(ctx, "SELECT trx_mysql_thread_id FROM information_schema.innodb_trx")
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		for _, id := range ids {
			if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil {
				t.Fatal(err)
			}
		}
		n = len(ids)
	}
	if n != 1 {
		t.Fatalf("ended %d sessions in a transaction, want the admitted one", n)
	}
}
