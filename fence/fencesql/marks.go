package fencesql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
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
// Admit takes four steps, on a connection of its own and in a
// transaction that it keeps until release:
//
//  1. It takes the key's turn: PostgreSQL, an advisory lock of the
//     transaction's (pg_advisory_xact_lock) on a hash of the table and
//     the key; MySQL, a named lock of the session's (GET_LOCK); SQLite,
//     a mutex of this process's for db. Another Admit of the key waits
//     here until release.
//  2. The raise-or-refuse statement of Check, in its own transaction
//     (autocommit), on another connection: the mark is token, committed,
//     or Admit refuses.
//  3. It locks the mark's row in its transaction (PostgreSQL, MySQL:
//     SELECT ... FOR UPDATE; SQLite: an UPDATE that changes nothing,
//     which takes the database's write lock) and reads the mark: if a
//     transaction's Check raised it above token between the two steps,
//     Admit refuses. From here to release, Check of the key in a
//     transaction waits too.
//  4. release ends the transaction (a rollback: it wrote nothing) and
//     gives the turn back, which frees the locks.
//
// Since the mark is committed before a write is admitted, a release that
// fails (the connection is lost) undoes nothing: the server frees the
// locks when it sees the session end. Since the turn is taken before the
// raise, no other Admit of the key decides on a raise whose writer has
// not yet written.
//
// An admitted writer keeps one of db's connections until release, and
// Admit needs a second one while it raises: db's pool (SetMaxOpenConns)
// must have room for them, and for what the writers do with db
// themselves. On SQLite, the write lock is the database's: one writer of
// any key at a time; and the turn is this process's, so that processes
// that share a SQLite file may refuse a stale writer before the writer
// that raised the mark has written (never admit it).
func (f *Fence) Marks(db *sql.DB) fence.Marks {
	return &marks{f: f, db: db}
}

type marks struct {
	f  *Fence
	db *sql.DB
}

// sqliteTurns holds the turn of each SQLite database a Marks admits to:
// a *sync.Mutex per *sql.DB.
var sqliteTurns sync.Map

// Admit implements fence.Marks.
func (m *marks) Admit(ctx context.Context, key string, token uint64) (func(), error) {
	if err := fence.Check(key, token); err != nil {
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
	a := &admission{m: m, key: key, conn: conn, tx: tx}
	if err := a.admit(ctx, token); err != nil {
		a.end()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(a.end) }, nil
}

// An admission is one Admit's connection, its transaction, and on SQLite
// the process's turn while it holds it.
type admission struct {
	m          *marks
	key        string
	conn       *sql.Conn
	tx         *sql.Tx
	sqliteTurn *sync.Mutex
}

// admit takes the key's turn (step 1), raises the mark in its own
// transaction (step 2), and locks the mark's row, refusing if a Check
// raised it above token in between (step 3).
func (a *admission) admit(ctx context.Context, token uint64) error {
	if err := a.takeTurn(ctx); err != nil {
		return ioErr(ctx, "admit", a.key, err)
	}
	if err := a.raise(ctx, token); err != nil {
		return err
	}
	stmt, args := a.m.f.lockSQL(a.key)
	var mark int64
	err := a.tx.QueryRowContext(ctx, stmt, args...).Scan(&mark)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("fencesql: admit of key %q: its mark's row is gone from %s", a.key, a.m.f.table)
	case err != nil:
		return ioErr(ctx, "admit", a.key, err)
	case uint64(mark) > token:
		return &fence.StaleError{Key: a.key, Token: token, Mark: uint64(mark)}
	case uint64(mark) < token:
		return fmt.Errorf("fencesql: the mark of key %q is %d after a check of token %d: is %s a table of fencesql's?", a.key, mark, token, a.m.f.table)
	}
	if a.sqliteTurn != nil {
		// The database's write lock, taken above, is the turn from here.
		a.sqliteTurn.Unlock()
		a.sqliteTurn = nil
	}
	return nil
}

// raise runs the raise-or-refuse statement in autocommit on a connection
// of its own, which it holds until it has read the statement's result. A
// database/sql Result locks the connection it came from when read: read
// after the pool took the connection back, it waits for whoever holds it
// then, and that may be another Admit of the key, waiting for this one's
// turn in its statement.
func (a *admission) raise(ctx context.Context, token uint64) error {
	c, err := a.m.db.Conn(ctx)
	if err != nil {
		return ioErr(ctx, "admit", a.key, err)
	}
	defer c.Close()
	return a.m.f.raise(ctx, c, a.key, token)
}

// takeTurn waits for the key's turn: on PostgreSQL an advisory lock of
// the transaction's, on MySQL a named lock of the session's, on SQLite a
// mutex of the process's.
func (a *admission) takeTurn(ctx context.Context) error {
	switch a.m.f.dialect {
	case PostgreSQL:
		_, err := a.tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", a.m.f.lockID(a.key))
		return err
	case MySQL:
		var got sql.NullInt64
		err := a.tx.QueryRowContext(ctx, "SELECT GET_LOCK(?, 31536000)", a.m.f.lockName(a.key)).Scan(&got)
		if err == nil && got.Int64 != 1 {
			err = fmt.Errorf("GET_LOCK returned %v", got)
		}
		return err
	}
	v, _ := sqliteTurns.LoadOrStore(a.m.db, new(sync.Mutex))
	a.sqliteTurn = v.(*sync.Mutex)
	a.sqliteTurn.Lock()
	return nil
}

// end gives the turn back and ends the transaction (a rollback: it
// wrote nothing), which frees the locks.
func (a *admission) end() {
	if a.sqliteTurn != nil {
		a.sqliteTurn.Unlock()
		a.sqliteTurn = nil
	}
	_ = a.tx.Rollback()
	if a.m.f.dialect == MySQL {
		// The named lock is the session's: give it back, or end the
		// session if that fails.
		if _, err := a.conn.ExecContext(context.Background(), "DO RELEASE_LOCK(?)", a.m.f.lockName(a.key)); err != nil {
			_ = a.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	_ = a.conn.Close()
}

// lockID is the key's advisory lock on PostgreSQL: a hash of the table
// and the key. Two keys that share one only wait for each other.
func (f *Fence) lockID(key string) int64 {
	h := sha256.Sum256([]byte(f.table + "\x00" + key))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// lockName is the key's named lock on MySQL (at most 64 characters): a
// hash of the table and the key.
func (f *Fence) lockName(key string) string {
	h := sha256.Sum256([]byte(f.table + "\x00" + key))
	return "dsync_fence:" + hex.EncodeToString(h[:20])
}
