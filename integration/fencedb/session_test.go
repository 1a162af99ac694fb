package fencedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencehttp/fencehttptest"
	"github.com/go-dsync/dsync/fence/fencesql"
	"github.com/go-dsync/dsync/fence/fencetest"
)

// TestMarksSessionEndsUnderWriter: the server ends the session of an
// admitted writer while it writes (pg_terminate_backend, KILL: what
// idle_in_transaction_session_timeout, idle_transaction_timeout, a
// failover or a dropped connection do). The next Admit of the key, from
// another instance, is not admitted until the writer releases; after
// the release it is, and a transaction's Check of the first writer's
// token is then refused. An admission whose process is gone (it neither
// renews nor releases) ends at its lease.
func TestMarksSessionEndsUnderWriter(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite runs in the process: there is no session the server ends")
		}
		ctx := testCtx(t)
		first := marks(t, f, sqlOpenLike(t, d, db)) // the writer's instance
		next := marks(t, f, db)                     // another instance
		rel5, err := first.Admit(ctx, "k", 5)
		if err != nil {
			t.Fatal(err)
		}
		killAdmitted(t, ctx, db, d)
		// A window for the bug to show: today's release-free turn
		// admits 6 within milliseconds of the kill.
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rel6, err := next.Admit(wctx, "k", 6)
		cancel()
		if err == nil {
			rel6()
			t.Fatal("Admit(6) was admitted while the writer admitted under 5, whose session the server ended, still writes")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Admit(6) while 5 writes: %v, want it to wait (context.DeadlineExceeded)", err)
		}
		rel5() // its own session is gone: it deletes its row on another
		rel6, err = admitRetry(ctx, next, "k", 6)
		if err != nil {
			t.Fatalf("Admit(6) after 5's release: %v", err)
		}
		rel6()
		if err := commitCheck(t, ctx, db, f, "k", 5); !errors.Is(err, fence.ErrStale) {
			t.Fatalf("Check(5) after 6 was admitted: %v, want ErrStale", err)
		}

		// A process that died: its session ends and nobody renews or
		// deletes its row, which ends at its lease.
		gone := sqlOpenLike(t, d, db)
		dying := marks(t, f, gone, fencesql.WithAdmitLease(time.Second))
		rel7, err := dying.Admit(ctx, "k", 7)
		if err != nil {
			t.Fatal(err)
		}
		defer rel7()
		killAdmitted(t, ctx, db, d)
		gone.Close() // its renewals fail from here
		rel8, err := admitRetry(ctx, next, "k", 8)
		if err != nil {
			t.Fatalf("Admit(8) after 7's process died: %v, want admitted once 7's lease ran out", err)
		}
		rel8()
	})
}

// TestMarksUnderStricterDefaultIsolation: on a PostgreSQL database whose
// default isolation is REPEATABLE READ or SERIALIZABLE, Marks admits,
// refuses a stale token, and admits the next writer after a release.
func TestMarksUnderStricterDefaultIsolation(t *testing.T) {
	for _, level := range []string{"repeatable read", "serializable"} {
		t.Run(level, func(t *testing.T) {
			ctx := testCtx(t)
			db0, f := setup(t, fencesql.PostgreSQL)
			if _, err := db0.ExecContext(ctx, fmt.Sprintf("DO $$ BEGIN EXECUTE format('ALTER DATABASE %%I SET default_transaction_isolation = %%L', current_database(), '%s'); END $$", level)); err != nil {
				t.Fatal(err)
			}
			db := sqlOpenLike(t, fencesql.PostgreSQL, db0) // new sessions take the setting
			var got string
			if err := db.QueryRowContext(ctx, "SHOW default_transaction_isolation").Scan(&got); err != nil || got != level {
				t.Fatalf("default_transaction_isolation = %q, %v; want %q", got, err, level)
			}
			m := marks(t, f, db)
			for _, token := range []uint64{5, 6, 6} {
				rel, err := m.Admit(ctx, "k", token)
				if err != nil {
					t.Fatalf("Admit(%d) at %s: %v", token, level, err)
				}
				rel()
			}
			if _, err := m.Admit(ctx, "k", 5); !errors.Is(err, fence.ErrStale) {
				t.Fatalf("Admit(5) after 6 at %s: %v, want ErrStale", level, err)
			}
		})
	}
}

// TestCreateTableConcurrently: six callers, each on a pool of its own,
// create the tables of a new Fence at once, round after round; every
// call succeeds, and the tables are there.
func TestCreateTableConcurrently(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, _ *fencesql.Fence) {
		ctx := testCtx(t)
		const callers, rounds = 6, 8
		pools := make([]*sql.DB, callers)
		for i := range pools {
			pools[i] = db
			if d != fencesql.SQLite {
				pools[i] = sqlOpenLike(t, d, db)
			}
			if err := pools[i].PingContext(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var failed []string
		for r := range rounds {
			f, err := fencesql.New(d, fencesql.WithTable(fmt.Sprintf("fence_round_%d", r)))
			if err != nil {
				t.Fatal(err)
			}
			start := make(chan struct{})
			errs := make(chan error, callers)
			for _, p := range pools {
				go func() {
					<-start
					errs <- f.CreateTable(ctx, p)
				}()
			}
			close(start)
			for range callers {
				if err := <-errs; err != nil {
					failed = append(failed, err.Error())
				}
			}
			if err := commitCheck(t, ctx, db, f, "k", 1); err != nil {
				t.Fatalf("round %d: Check after CreateTable: %v", r, err)
			}
			rel, err := marks(t, f, db).Admit(ctx, "k", 2)
			if err != nil {
				t.Fatalf("round %d: Admit after CreateTable: %v", r, err)
			}
			rel()
		}
		if len(failed) > 0 {
			t.Fatalf("%d of %d concurrent CreateTable calls failed, e.g. %s", len(failed), callers*rounds, failed[0])
		}
	})
}

// TestMarksSQLiteWriterWritesTheDatabase: on SQLite, a writer admitted
// by Marks writes to the same database file, in a transaction of its
// own that checks its token and in one that does not, while admitted.
func TestMarksSQLiteWriterWritesTheDatabase(t *testing.T) {
	ctx := testCtx(t)
	db, f := setup(t, fencesql.SQLite)
	if _, err := db.ExecContext(ctx, "CREATE TABLE reg (k TEXT PRIMARY KEY, v INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	rel, err := marks(t, f, db).Admit(ctx, "k", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(wctx, "INSERT INTO reg VALUES ('a', 1)"); err != nil {
		t.Fatalf("a write outside the fence while admitted: %v", err)
	}
	tx, err := db.BeginTx(wctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := f.Check(wctx, tx, "k", 5); err != nil {
		t.Fatalf("Check of the admitted token in the writer's own transaction: %v", err)
	}
	if _, err := tx.ExecContext(wctx, "INSERT INTO reg VALUES ('b', 2)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the writer's transaction while admitted: %v", err)
	}
}

// TestMarksReleaseIsBounded: the database stops answering while a writer
// is admitted (a proxy between the Marks' pool and the server stops
// forwarding); release returns within its timeout rather than when TCP
// gives up, and the next Admit, on a live path, is admitted once the
// admission's row ends at its lease.
func TestMarksReleaseIsBounded(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite runs in the process: there is no server to stop answering")
		}
		ctx := testCtx(t)
		p := newProxy(t, serverAddr(t, d, db))
		m := marks(t, f, openThrough(t, d, db, p.addr()), fencesql.WithReleaseTimeout(500*time.Millisecond), fencesql.WithAdmitLease(time.Second))
		rel, err := m.Admit(ctx, "k", 5)
		if err != nil {
			t.Fatal(err)
		}
		p.freeze()
		done := make(chan struct{})
		go func() { rel(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			p.cut() // let the release go, so the test ends
			<-done
			t.Fatal("release did not return while the database did not answer")
		}
		p.cut()
		rel6, err := admitRetry(ctx, marks(t, f, db), "k", 6)
		if err != nil {
			t.Fatalf("Admit(6) after 5's release could not reach the database: %v", err)
		}
		rel6()
	})
}

// TestConformanceSessionEnds runs the conformance suite, with its
// scenario where the server ends the session under an admitted writer,
// over HTTP with fencesql's Marks (two instances, each with a pool of
// its own) and in transactions that Check, on PostgreSQL and MariaDB.
// One trial at a time, so that the transactions open in the database
// while a writer is paused inside are its own, and at most what an
// earlier trial's abandoned requests have not ended yet: EndSession ends
// them all, as a server's timeout would.
func TestConformanceSessionEnds(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite runs in the process: there is no session the server ends")
		}
		o := fencetest.Options{Trials: 40, Parallel: 1}
		t.Run("HTTP", func(t *testing.T) {
			r := fencehttptest.NewResource(marks(t, f, db), marks(t, f, sqlOpenLike(t, d, db)))
			defer r.Close()
			fencetest.Run(t, sessionEnder{Resource: r, d: d, db: db}, o)
		})
		t.Run("Check", func(t *testing.T) {
			r := newResource(t, d) // a database of its own
			fencetest.Run(t, sessionEnder{Resource: r, d: d, db: r.db}, o)
		})
	})
}

// sessionEnder ends the sessions in a transaction in db's database (the
// admitted writer's among them).
type sessionEnder struct {
	fencetest.Resource
	d  fencesql.Dialect
	db *sql.DB
}

func (s sessionEnder) EndSession(ctx context.Context, _ string) error {
	n, err := endOpenSessions(ctx, s.db, s.d)
	if err == nil && n == 0 {
		err = errors.New("no session in a transaction to end: where is the admitted writer's?")
	}
	return err
}

// endOpenSessions ends, from the server's side, the sessions of db's
// database that are in a transaction, but the caller's, and returns how
// many it ended.
func endOpenSessions(ctx context.Context, db *sql.DB, d fencesql.Dialect) (int, error) {
	if d == fencesql.PostgreSQL {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`).Scan(&n)
		return n, err
	}
	time.Sleep(150 * time.Millisecond) // innodb_trx shows what it showed unless unread for 100 ms
	rows, err := db.QueryContext(ctx, "SELECT trx_mysql_thread_id FROM information_schema.innodb_trx WHERE trx_mysql_thread_id <> CONNECTION_ID()")
	if err != nil {
		return 0, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("KILL %d", id)); err != nil && !strings.Contains(err.Error(), "Unknown thread") {
			return 0, err
		}
	}
	return len(ids), nil
}

// TestMarksSessionTimeoutUnderWriter: the server's own timeout of an idle
// transaction (PostgreSQL's idle_in_transaction_session_timeout,
// MariaDB's idle_transaction_timeout, set short on the writer's
// instance) ends the admitted writer's session while it writes; the
// next Admit of the key, from another instance, waits until the writer
// releases.
func TestMarksSessionTimeoutUnderWriter(t *testing.T) {
	each(t, func(t *testing.T, d fencesql.Dialect, db *sql.DB, f *fencesql.Fence) {
		if d == fencesql.SQLite {
			t.Skip("SQLite runs in the process: there is no session the server ends")
		}
		ctx := testCtx(t)
		wdb := sqlOpenLike(t, d, db)
		setTimeout := "SET idle_in_transaction_session_timeout = '1s'"
		if d == fencesql.MySQL {
			setTimeout = "SET SESSION idle_transaction_timeout = 1" // seconds
		}
		wdb.SetMaxOpenConns(1) // so that the session set is the one Admit takes
		if _, err := wdb.ExecContext(ctx, setTimeout); err != nil {
			t.Fatal(err)
		}
		wdb.SetMaxOpenConns(0)
		first, next := marks(t, f, wdb), marks(t, f, db)
		// Admit's own transaction may idle past the timeout between its
		// statements on a loaded machine, and be ended before it admits:
		// it then fails, which is not what is tested here (admitRetry).
		rel5, err := admitRetry(ctx, first, "k", 5)
		if err != nil {
			t.Fatal(err)
		}
		defer rel5()
		// Wait for the server to end the admitted session.
		for n := -1; n != 0; {
			if ctx.Err() != nil {
				t.Fatal("the server did not end the admitted session")
			}
			time.Sleep(50 * time.Millisecond)
			n = openTransactions(t, ctx, db, d)
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rel6, err := next.Admit(wctx, "k", 6)
		cancel()
		if err == nil {
			rel6()
			t.Fatal("Admit(6) was admitted while the writer admitted under 5, whose session the server's timeout ended, still writes")
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Admit(6) while 5 writes: %v, want it to wait (context.DeadlineExceeded)", err)
		}
		rel5()
		rel6, err = admitRetry(ctx, next, "k", 6)
		if err != nil {
			t.Fatalf("Admit(6) after 5's release: %v", err)
		}
		rel6()
	})
}

// openTransactions counts the sessions of db's database in a
// transaction (MariaDB: of the server), but the caller's.
func openTransactions(t *testing.T, ctx context.Context, db *sql.DB, d fencesql.Dialect) int {
	t.Helper()
	q := `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`
	if d == fencesql.MySQL {
		time.Sleep(150 * time.Millisecond) // innodb_trx shows what it showed unless unread for 100 ms
		q = "SELECT count(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id <> CONNECTION_ID()"
	}
	var n int
	if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
