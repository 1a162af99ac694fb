// Package fencepgx keeps the fencing contract of package fence in a pgx
// transaction (github.com/jackc/pgx/v5), as fence/fencesql's Check does
// in a database/sql one: Check, first in the transaction, raises the
// key's mark to the hold's token in one statement, or refuses with a
// *fence.StaleError (matching fence.ErrStale), and holds the mark's row
// lock until the transaction ends. The marks, their table, and what each
// isolation level does are fencesql's (its package documentation); a
// program that fences through database/sql and through pgx shares one
// table and one Fence of fencesql.PostgreSQL.
//
// It is a module of its own so that the library's users who do not use
// pgx do not get it in their module graph.
package fencepgx

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/go-dsync/dsync/fence/fencesql"
)

// Check raises key's mark to token in tx, or refuses: fencesql's
// Fence.Check for a pgx transaction (f must be of fencesql.PostgreSQL).
// It is one statement, one round trip (pgx prepares it once per
// connection and caches it). Call it first in the transaction; on any
// error, roll tx back.
func Check(ctx context.Context, f *fencesql.Fence, tx pgx.Tx, key string, token uint64) error {
	if f == nil || f.Dialect() != fencesql.PostgreSQL {
		return errors.New("fencepgx: Check needs a Fence of fencesql.PostgreSQL")
	}
	if tx == nil {
		return fencesql.ErrNoTx
	}
	return f.CheckTx(ctx, pgxTx{tx}, key, token)
}

// pgxTx is a pgx.Tx as fencesql's Tx.
type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (t pgxTx) QueryRow(ctx context.Context, query string, args ...any) fencesql.Row {
	return row{t.tx.QueryRow(ctx, query, args...)}
}

// row is a pgx.Row whose Scan says "no row" as database/sql does.
type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}
