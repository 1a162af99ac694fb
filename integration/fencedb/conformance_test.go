package fencedb

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"testing"

	"github.com/go-dsync/dsync/fence/fencesql"
	"github.com/go-dsync/dsync/fence/fencetest"
	"github.com/go-dsync/dsync/internal/testbed/longtest"
)

// trials is the count of each conformance run: 0 when the
// -fencetest.trials flag is given, which then decides (the acceptance
// run of 10,000 is `go test -run '^TestConformance(HTTP|Pgx)?$'
// ./integration/fencedb -fencetest.trials=10000`, docs/contributing.md);
// else 1,000 in the long run (DSYNC_LONG=1, as CI's race run sets: the
// 10,000 took CI past its time); else 0, which leaves it to fencetest's
// default of 100.
func trials() int {
	if flagGiven("fencetest.trials") || !longtest.Enabled() {
		return 0
	}
	return 1000
}

// flagGiven reports whether the named flag was set on the command line.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			given = true
		}
	})
	return given
}

// sqlResource is a fenced register per key in a table reg(k, v), written
// in a transaction that checks the token first, as a user of fencesql
// writes.
type sqlResource struct {
	d         fencesql.Dialect
	db        *sql.DB
	f         *fencesql.Fence
	skipCheck bool // planted: the writes do not check
}

func newResource(t *testing.T, d fencesql.Dialect) *sqlResource {
	t.Helper()
	db, f := setup(t, d)
	ddl := "CREATE TABLE reg (k VARCHAR(600) PRIMARY KEY, v BIGINT NOT NULL)"
	if d == fencesql.MySQL {
		ddl = "CREATE TABLE reg (k VARBINARY(600) PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB"
	}
	if _, err := db.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	return &sqlResource{d: d, db: db, f: f}
}

func (r *sqlResource) Write(ctx context.Context, w fencetest.Write) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if !r.skipCheck {
		if err := r.f.Check(ctx, tx, w.Key, w.Token); err != nil {
			return err
		}
	}
	if w.Admitted != nil {
		if err := w.Admitted(ctx); err != nil {
			return err
		}
	}
	var q string
	switch r.d {
	case fencesql.PostgreSQL:
		q = "INSERT INTO reg (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
	case fencesql.MySQL:
		q = "INSERT INTO reg (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)"
	default:
		q = "INSERT INTO reg (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
	}
	if _, err := tx.ExecContext(ctx, q, w.Key, w.Value); err != nil {
		return err
	}
	return tx.Commit()
}

func (r *sqlResource) Read(ctx context.Context, key string) (int64, error) {
	q := "SELECT v FROM reg WHERE k = ?"
	if r.d == fencesql.PostgreSQL {
		q = "SELECT v FROM reg WHERE k = $1"
	}
	var v int64
	err := r.db.QueryRowContext(ctx, q, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

// TestConformance runs the conformance suite on each dialect, trials()
// trials each.
func TestConformance(t *testing.T) {
	for _, d := range []fencesql.Dialect{fencesql.PostgreSQL, fencesql.MySQL, fencesql.SQLite} {
		t.Run(d.String(), func(t *testing.T) {
			fencetest.Run(t, newResource(t, d), fencetest.Options{Trials: trials()})
		})
	}
}

// TestConformancePlanted: on each dialect, a Resource that skips the
// check is caught: the suite reports stale writes.
func TestConformancePlanted(t *testing.T) {
	for _, d := range []fencesql.Dialect{fencesql.PostgreSQL, fencesql.MySQL, fencesql.SQLite} {
		t.Run(d.String(), func(t *testing.T) {
			r := newResource(t, d)
			r.skipCheck = true
			rep, err := fencetest.Check(t.Context(), r, fencetest.Options{Trials: 12})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("planted: %s", rep)
			if len(rep.StaleWrites) == 0 {
				t.Fatalf("the suite found no stale write of a Resource that skips the check: %s", rep)
			}
		})
	}
}
