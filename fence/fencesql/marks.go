package fencesql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/go-dsync/dsync/fence"
)

// Marks returns a fence.Marks that keeps its marks in the Fence's table
// in db, for writers that do not run in a transaction of db's (an HTTP
// handler that writes files): several instances of a service that share
// db admit one writer of a key at a time among them, and keep the marks
// across restarts.
//
// Admit takes three steps, so that a write is never admitted under a
// mark that was not committed first:
//
//  1. The raise-or-refuse statement of Check, in its own transaction
//     (autocommit): the mark is token, committed, or Admit refuses.
//  2. A transaction that locks the mark's row (PostgreSQL, MySQL:
//     SELECT ... FOR UPDATE; SQLite: an UPDATE that changes nothing,
//     which takes the database's write lock) and reads the mark: if a
//     later token raised it between the two steps, Admit rolls back and
//     refuses.
//  3. release ends that transaction (a rollback: it wrote nothing),
//     which frees the lock.
//
// Another Admit of the key waits at its first step, on the row's lock,
// until release. If release's rollback fails (the connection is lost),
// nothing is undone: the mark was committed at step 1, and the server
// frees the lock when it sees the connection end.
//
// An admitted writer keeps one of db's connections until release: db's
// pool (SetMaxOpenConns) must have room for every writer admitted at
// once, and for what they do with db themselves. On SQLite, the write
// lock is the database's: one writer of any key at a time.
func (f *Fence) Marks(db *sql.DB) fence.Marks {
	return &marks{f: f, db: db}
}

type marks struct {
	f  *Fence
	db *sql.DB
}

// Admit implements fence.Marks.
func (m *marks) Admit(ctx context.Context, key string, token uint64) (func(), error) {
	if err := fence.Check(key, token); err != nil {
		return nil, err
	}
	if err := m.f.raise(ctx, m.db, key, token); err != nil {
		return nil, err
	}
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return nil, ioErr(ctx, "admit", key, err)
	}
	// The transaction outlives ctx, which bounds Admit only: database/sql
	// rolls a transaction back when its context ends.
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		conn.Close()
		return nil, ioErr(ctx, "admit", key, err)
	}
	abandon := func() {
		_ = tx.Rollback()
		_ = conn.Close()
	}
	stmt, args := m.f.lockSQL(key)
	var mark int64
	err = tx.QueryRowContext(ctx, stmt, args...).Scan(&mark)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		abandon()
		return nil, fmt.Errorf("fencesql: admit of key %q: its mark's row is gone from %s", key, m.f.table)
	case err != nil:
		abandon()
		return nil, ioErr(ctx, "admit", key, err)
	case uint64(mark) > token:
		abandon()
		return nil, &fence.StaleError{Key: key, Token: token, Mark: uint64(mark)}
	case uint64(mark) < token:
		abandon()
		return nil, fmt.Errorf("fencesql: the mark of key %q is %d after a check of token %d: is %s a table of fencesql's?", key, mark, token, m.f.table)
	}
	var once sync.Once
	return func() { once.Do(abandon) }, nil
}
