package fencedb

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/go-dsync/dsync/contrib/fencepgx"
	"github.com/go-dsync/dsync/fence"
	"github.com/go-dsync/dsync/fence/fencesql"
	"github.com/go-dsync/dsync/fence/fencetest"
)

// pgxResource is sqlResource's register written in a pgx transaction,
// checked by fencepgx.Check: each write takes a connection of db's pool
// and works on it as pgx (stdlib's Conn).
type pgxResource struct{ *sqlResource }

// inPgxTx runs fn in a pgx transaction on a connection of db, and
// commits if fn returns nil.
func inPgxTx(ctx context.Context, db *sql.DB, fn func(tx pgx.Tx) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		tx, err := dc.(*stdlib.Conn).Conn().Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if err := fn(tx); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

func (r pgxResource) Write(ctx context.Context, w fencetest.Write) error {
	return inPgxTx(ctx, r.db, func(tx pgx.Tx) error {
		if !r.skipCheck {
			if err := fencepgx.Check(ctx, r.f, tx, w.Key, w.Token); err != nil {
				return err
			}
		}
		if w.Admitted != nil {
			if err := w.Admitted(ctx); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "INSERT INTO reg (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", w.Key, w.Value)
		return err
	})
}

// TestPgxCheck: fencepgx.Check raises, accepts an equal token, and
// refuses a lower one with the mark, as fencesql's Check does.
func TestPgxCheck(t *testing.T) {
	db, f := setup(t, fencesql.PostgreSQL)
	ctx := testCtx(t)
	check := func(token uint64) error {
		return inPgxTx(ctx, db, func(tx pgx.Tx) error { return fencepgx.Check(ctx, f, tx, "k", token) })
	}
	for _, token := range []uint64{3, 3, 5} {
		if err := check(token); err != nil {
			t.Fatalf("Check(%d): %v", token, err)
		}
	}
	var stale *fence.StaleError
	if err := check(4); !errors.As(err, &stale) || stale.Mark != 5 {
		t.Fatalf("Check(4) after 5 = %v, want a StaleError with mark 5", err)
	}
	if got := markOf(t, db, fencesql.PostgreSQL, "k"); got != 5 {
		t.Errorf("mark %d, want 5", got)
	}
	my, err := fencesql.New(fencesql.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	if err := inPgxTx(ctx, db, func(tx pgx.Tx) error { return fencepgx.Check(ctx, my, tx, "k", 6) }); err == nil {
		t.Error("Check with a MySQL Fence: nil error")
	}
}

// TestConformancePgx runs the conformance suite through pgx, and catches
// a Resource that skips the check.
func TestConformancePgx(t *testing.T) {
	fencetest.Run(t, pgxResource{newResource(t, fencesql.PostgreSQL)}, fencetest.Options{Trials: trials()})
	planted := pgxResource{newResource(t, fencesql.PostgreSQL)}
	planted.skipCheck = true
	rep, err := fencetest.Check(t.Context(), planted, fencetest.Options{Trials: 12})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.StaleWrites) == 0 {
		t.Errorf("a pgx Resource that skips the check was not caught: %s", rep)
	}
}
