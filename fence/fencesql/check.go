package fencesql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-dsync/dsync/fence"
)

// Check raises key's mark to token, or refuses, in the caller's transaction
// tx. It sends one statement, which is to be the transaction's first. It
// returns nil if the mark is now token (it was at most token, or the key
// had none), and then holds the mark's row lock (SQLite: the database's
// write lock) until tx ends, so that tx's writes commit only while no later
// token of key has been accepted. It returns a *fence.StaleError, which
// matches fence.ErrStale, if the mark is above token: the caller's hold has
// ended, and it must roll tx back. Any other error says nothing of the
// mark; the caller rolls back too.
//
// A bad key or token (fence.Check) and a nil tx are refused before any
// I/O. The raise is undone if tx rolls back.
func (f *Fence) Check(ctx context.Context, tx *sql.Tx, key string, token uint64) error {
	if err := fence.Check(key, token); err != nil {
		return err
	}
	if tx == nil {
		return ErrNoTx
	}
	return f.raise(ctx, tx, key, token)
}

// querier is what the statements run on: a *sql.Tx, or a *sql.Conn in
// autocommit. Never a *sql.DB: raise reads its statement's Result, which
// locks the connection it came from, and a *sql.DB's connection is back
// in the pool, perhaps another caller's, by then (see admission.raise).
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// raise runs the raise-or-refuse statement on q.
func (f *Fence) raise(ctx context.Context, q querier, key string, token uint64) error {
	if f.dialect == MySQL {
		return f.raiseMySQL(ctx, q, key, token)
	}
	return f.raiseIn(ctx, sqlTx{q}, key, token)
}

// A Tx is what CheckTx needs of a transaction of a driver outside
// database/sql. fence/fencepgx of the contrib modules adapts pgx.Tx to it.
type Tx interface {
	// Exec runs a statement and returns the count of rows it inserted
	// or updated.
	Exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	// QueryRow runs a statement and returns its one row.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// A Row is the one row a statement returns, as *sql.Row and pgx.Row are.
// Scan returns an error that matches sql.ErrNoRows if the statement
// returned none.
type Row interface {
	Scan(dest ...any) error
}

// CheckTx is Check for a transaction of a driver outside database/sql,
// such as pgx's. PostgreSQL and SQLite only: on MySQL the check reads
// what the statement's reply says of the row (LAST_INSERT_ID), which a
// Tx does not carry.
func (f *Fence) CheckTx(ctx context.Context, tx Tx, key string, token uint64) error {
	if err := fence.Check(key, token); err != nil {
		return err
	}
	switch {
	case tx == nil:
		return ErrNoTx
	case f.dialect == MySQL:
		return errors.New("fencesql: CheckTx of a MySQL Fence: use Check, in a database/sql transaction")
	}
	return f.raiseIn(ctx, tx, key, token)
}

// raiseIn runs the raise-or-refuse statement of PostgreSQL and SQLite in
// tx. The statement inserts or raises the key's row, or refuses: the
// rows it reports (1 or 0) say which. (A RETURNING clause would say it
// too, but a statement that returns rows costs pgx more than one that
// does not: the check is then more than the round trip it sends.)
func (f *Fence) raiseIn(ctx context.Context, tx Tx, key string, token uint64) error {
	n, err := tx.Exec(ctx, f.raiseSQL(), []byte(key), int64(token))
	switch {
	case err != nil:
		return ioErr(ctx, "check", key, err)
	case n == 1:
		return nil
	case n != 0:
		return fmt.Errorf("fencesql: a check of key %q changed %d rows of %s: is it a table of fencesql's?", key, n, f.table)
	}
	// Refused: the mark, for the error; left 0 if the read fails.
	e := &fence.StaleError{Key: key, Token: token}
	var mark int64
	if err := tx.QueryRow(ctx, f.readSQL(), []byte(key)).Scan(&mark); err == nil && uint64(mark) > token {
		e.Mark = uint64(mark)
	}
	return e
}

// sqlTx is a database/sql transaction, or a database in autocommit, as
// a Tx.
type sqlTx struct{ q querier }

func (t sqlTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) QueryRow(ctx context.Context, query string, args ...any) Row {
	return t.q.QueryRowContext(ctx, query, args...)
}

// raiseSQL is the raise-or-refuse statement of PostgreSQL and SQLite: it
// inserts or raises the key's row (1 row affected), or refuses (0).
// PostgreSQL locks the conflicting row even when the WHERE refuses the
// update; SQLite's INSERT takes the database's write lock either way.
func (f *Fence) raiseSQL() string {
	if f.dialect == PostgreSQL {
		return "INSERT INTO " + f.table + " AS f (fence_key, mark) VALUES ($1, $2) " +
			"ON CONFLICT (fence_key) DO UPDATE SET mark = EXCLUDED.mark WHERE f.mark <= EXCLUDED.mark"
	}
	return "INSERT INTO " + f.table + " (fence_key, mark) VALUES (?, ?) " +
		"ON CONFLICT (fence_key) DO UPDATE SET mark = excluded.mark WHERE mark <= excluded.mark"
}

// raiseMySQL raises or refuses on MySQL and MariaDB. MySQL's INSERT has
// no RETURNING, and the rows it reports affected depend on the client's
// flags (CLIENT_FOUND_ROWS), so the statement reports the mark through
// LAST_INSERT_ID(expr), which the server sends back in the statement's
// reply: 0 when the row was inserted (the table has no AUTO_INCREMENT
// column), else the mark after the update, GREATEST(mark, token). InnoDB
// holds the row's exclusive lock to the commit whether or not the value
// changed.
//
// The values go into the statement as literals (the key in hex, which
// needs no escaping) so that the statement needs no parameters:
// go-sql-driver/mysql sends a statement with parameters as a prepared
// statement, a second round trip, unless the DSN sets interpolateParams.
func (f *Fence) raiseMySQL(ctx context.Context, q querier, key string, token uint64) error {
	stmt := fmt.Sprintf("INSERT INTO %s (fence_key, mark) VALUES (X'%x', %d) "+
		"ON DUPLICATE KEY UPDATE mark = LAST_INSERT_ID(GREATEST(mark, %d))", f.table, key, token, token)
	res, err := q.ExecContext(ctx, stmt)
	if err != nil {
		return ioErr(ctx, "check", key, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return ioErr(ctx, "check", key, err)
	}
	switch mark := uint64(id); {
	case mark == 0 || mark == token:
		return nil
	case mark > token:
		return &fence.StaleError{Key: key, Token: token, Mark: mark}
	default:
		return fmt.Errorf("fencesql: the mark of key %q is %d after a check of token %d: is %s a table of fencesql's?", key, mark, token, f.table)
	}
}

// readSQL reads a key's mark; lockSQL reads it and locks its row
// (SQLite: the database) to the end of the transaction.
func (f *Fence) readSQL() string {
	if f.dialect == PostgreSQL {
		return "SELECT mark FROM " + f.table + " WHERE fence_key = $1"
	}
	return "SELECT mark FROM " + f.table + " WHERE fence_key = ?"
}

func (f *Fence) lockSQL(key string) (string, []any) {
	switch f.dialect {
	case PostgreSQL:
		return "SELECT mark FROM " + f.table + " WHERE fence_key = $1 FOR UPDATE", []any{[]byte(key)}
	case MySQL:
		return fmt.Sprintf("SELECT mark FROM %s WHERE fence_key = X'%x' FOR UPDATE", f.table, key), nil
	}
	// SQLite has no row locks: a write takes the database's.
	return "UPDATE " + f.table + " SET mark = mark WHERE fence_key = ? RETURNING mark", []any{[]byte(key)}
}

// ioErr is the error of a statement that failed: ctx's cause if ctx
// ended, else err with what failed.
func ioErr(ctx context.Context, what, key string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("fencesql: %s of key %q: %w", what, key, err)
}
