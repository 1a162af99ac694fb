// Package fencesql keeps the fencing contract of package fence in a SQL
// database. Writes that cannot join a transaction of the database's go
// through Marks instead (see Writes outside a transaction, below).
//
// The check runs inside the caller's own database/sql transaction, on
// PostgreSQL, MySQL and MariaDB, and SQLite. It imports only the standard
// library and package fence; the program brings its driver.
//
// # The contract in SQL
//
// A table (dsync_fence by default) keeps one row per key: the key, and
// its mark, the highest token accepted. A fenced transaction runs
// Check first:
//
//	BEGIN
//	Check(ctx, tx, key, token)   -- one statement: raise the mark, or refuse
//	... the transaction's reads and writes ...
//	COMMIT
//
// Check's statement inserts the key's row with mark = token, or raises
// the mark to token if it is at most token, or changes nothing and
// refuses (a *fence.StaleError, matching fence.ErrStale) if the mark is
// above token. Either way it holds the row's lock until the transaction
// ends (on SQLite, the database's write lock). So while the transaction
// runs, no other transaction's Check of the key gets past its statement.
// A later holder's waits, and then raises the mark. A stale holder's
// waits, and then is refused if this transaction committed. The
// transaction's writes commit only with the raise, and a transaction
// rolled back undoes its raise. A transaction that was refused must roll
// back: its holder's hold has ended.
//
// Check is one statement, one round trip to the server: with pgx
// (github.com/jackc/pgx/v5/stdlib), whose statement cache prepares the
// statement once per connection; with go-sql-driver/mysql, since the
// statement carries its values as literals. (A driver that prepares
// each statement with parameters before it runs it takes two.) On a
// refusal, a
// second statement reads the mark for the error (not on MySQL, where the
// first returns it).
//
// A holder stopped inside its transaction (SIGSTOP, a GC pause, a
// suspended VM) keeps the row's lock while it stays stopped, and the
// next holder's Check waits for it that long. The servers' settings
// bound the wait, and none lets a stale write in:
//   - PostgreSQL's idle_in_transaction_session_timeout and MariaDB's
//     idle_transaction_timeout end the stopped holder's session (its
//     transaction rolls back, its writes never commit);
//   - lock_timeout and statement_timeout (PostgreSQL),
//     innodb_lock_wait_timeout (InnoDB, 50 s by default) end the waiter's
//     Check with an error that is not a refusal, and it wrote nothing.
//
// Call Check first in the transaction, before the reads the writes
// depend on: a check made after them lets a stale holder write a value
// computed from data that a later holder has since changed. A
// transaction that checks several keys checks them in one order
// everywhere, or the servers' deadlock detection aborts one of two
// transactions that checked two keys in opposite orders.
//
// # Isolation levels
//
// READ COMMITTED, PostgreSQL's default, is enough: Check waits for the
// row's lock and then sees the latest committed mark. Under REPEATABLE
// READ or SERIALIZABLE on PostgreSQL, a Check whose row was raised by a
// transaction that committed after this one's snapshot fails with a
// serialization error (SQLSTATE 40001) instead of waiting and then
// deciding. Nothing is written, and the caller retries the transaction
// as it does for every serialization error. On MySQL and MariaDB
// (InnoDB), a locking statement acts on the latest committed row at every
// level, REPEATABLE READ (the default) included. A transaction's
// consistent snapshot is taken at its first plain read, after Check, so
// its reads
// see what the holder before it committed. SQLite's transactions are
// serializable.
//
// # The table
//
// DDL returns the statement that creates the table, and CreateTable
// runs it, with AdmitDDL's for the admissions table of Marks
// (dsync_fence_admit); a migration of one's own may run them instead.
// CreateTable is safe to call from many processes at once, as replicas
// that start together do. The marks' table:
//
//	-- PostgreSQL
//	CREATE TABLE IF NOT EXISTS dsync_fence (fence_key BYTEA PRIMARY KEY, mark BIGINT NOT NULL)
//	-- MySQL, MariaDB
//	CREATE TABLE IF NOT EXISTS dsync_fence (fence_key VARBINARY(512) NOT NULL PRIMARY KEY, mark BIGINT NOT NULL) ENGINE=InnoDB
//	-- SQLite
//	CREATE TABLE IF NOT EXISTS dsync_fence (fence_key BLOB NOT NULL PRIMARY KEY, mark INTEGER NOT NULL)
//
// The key is kept as bytes, so that keys compare byte for byte in every
// dialect (MySQL's default collations fold case, and MariaDB's binary
// ones ignore trailing spaces). A row is never deleted by fencesql: a
// key's mark must outlive every holder of the key that may still write.
//
// On MySQL, Check reads the mark from the statement's LAST_INSERT_ID. On
// SQLite it needs 3.35 or later (RETURNING), and a database in a file
// (each connection to ":memory:" opens a database of its own). It also
// needs a busy timeout (busy_timeout) long enough that a transaction waits for
// another's write lock instead of failing with SQLITE_BUSY.
//
// # Writes outside a transaction
//
// Marks returns a fence.Marks kept in the same table, for writers whose
// writes cannot join a transaction of the database's. Such are the
// handlers of fence/fencehttp's middleware. See Marks for how it admits
// one writer of a key at a time, and why an admission outlives the
// database session it was taken in.
package fencesql
