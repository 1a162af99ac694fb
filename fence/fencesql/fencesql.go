package fencesql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// A Dialect is the SQL of a database server. The statements a Fence sends
// are written for it.
type Dialect int

const (
	// PostgreSQL (INSERT ... ON CONFLICT: 9.5 or later). Tested on 15.
	PostgreSQL Dialect = iota + 1
	// MySQL and MariaDB, on InnoDB. Tested on MariaDB 10.11.
	MySQL
	// SQLite (RETURNING: 3.35 or later), in a file. Tested with
	// modernc.org/sqlite.
	SQLite
)

func (d Dialect) String() string {
	switch d {
	case PostgreSQL:
		return "PostgreSQL"
	case MySQL:
		return "MySQL"
	case SQLite:
		return "SQLite"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// DefaultTable is the table of the marks unless WithTable names another.
const DefaultTable = "dsync_fence"

// Errors of New and of a Check with no transaction.
var (
	// ErrBadTable is returned by New for a table name it does not accept:
	// it accepts letters, digits and underscores, not starting with a
	// digit, at most 57 bytes (so that the admissions table of Marks,
	// named with "_admit" appended, is at most 63), and one optional
	// schema of at most 63 before a dot ("app.dsync_fence").
	ErrBadTable = errors.New("fencesql: a table name is letters, digits and underscores, at most 57 bytes and not starting with a digit, with an optional schema (at most 63) before one dot")

	// ErrBadDialect is returned by New for a Dialect that is none of
	// PostgreSQL, MySQL and SQLite.
	ErrBadDialect = errors.New("fencesql: the dialect is none of PostgreSQL, MySQL and SQLite")

	// ErrNoTx is returned by Check for a nil transaction, before any I/O.
	ErrNoTx = errors.New("fencesql: Check needs the caller's transaction (tx is nil)")
)

// An Option configures New. A bad value (or a nil Option) is an error New
// returns.
type Option func(*Fence) error

// WithTable sets the table the marks are kept in: name, or schema.name.
// The default is DefaultTable ("dsync_fence"). The name goes into the
// statements unquoted: a name that is a reserved word of the dialect
// (user, order) fails at the server. A name ErrBadTable describes not is
// refused.
func WithTable(name string) Option {
	return func(f *Fence) error {
		if !validTable(name) {
			return fmt.Errorf("%w (got %q)", ErrBadTable, name)
		}
		f.table = name
		return nil
	}
}

// A Fence keeps the marks of fenced keys in one table of a SQL database.
// It holds no connection and no state besides its statements: one Fence
// serves every database of its dialect and is safe for concurrent use.
type Fence struct {
	dialect Dialect
	table   string
}

// New returns a Fence for databases of dialect d. It checks the table's
// name, and does no I/O.
func New(d Dialect, opts ...Option) (*Fence, error) {
	if d != PostgreSQL && d != MySQL && d != SQLite {
		return nil, fmt.Errorf("%w (got %d)", ErrBadDialect, int(d))
	}
	f := &Fence{dialect: d, table: DefaultTable}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("fencesql: nil option")
		}
		if err := o(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// validTable accepts ident or ident.ident, where an ident is 1 to 63
// letters, digits and underscores, not starting with a digit: a name no
// dialect needs quoted, so it goes into the statements as it is.
func validTable(name string) bool {
	part, parts := 0, 1
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if part == 0 || parts == 2 {
				return false
			}
			part, parts = 0, 2
			continue
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9':
			if part == 0 {
				return false
			}
		default:
			return false
		}
		part++
		if part > 63 {
			return false
		}
	}
	return part > 0 && part <= maxTableLen
}

// maxTableLen is the longest table name (after its schema): 63, the
// longest name PostgreSQL keeps (longer ones it cuts, silently), less
// what the admissions table appends.
const maxTableLen = 63 - len(admitSuffix)

// Dialect returns the Fence's dialect.
func (f *Fence) Dialect() Dialect { return f.dialect }

// Table returns the name of the Fence's table.
func (f *Fence) Table() string { return f.table }

// DDL returns the statement that creates the Fence's table if it does not
// exist. It is for a migration of one's own; CreateTable runs it.
func (f *Fence) DDL() string {
	switch f.dialect {
	case PostgreSQL:
		return "CREATE TABLE IF NOT EXISTS " + f.table + " (fence_key BYTEA PRIMARY KEY, mark BIGINT NOT NULL)"
	case MySQL:
		return "CREATE TABLE IF NOT EXISTS " + f.table + " (fence_key VARBINARY(512) NOT NULL PRIMARY KEY, mark BIGINT NOT NULL) ENGINE=InnoDB"
	default:
		return "CREATE TABLE IF NOT EXISTS " + f.table + " (fence_key BLOB NOT NULL PRIMARY KEY, mark INTEGER NOT NULL)"
	}
}

// CreateTable creates the Fence's tables in db if they do not exist.
//
// They are the Fence's table and the admissions table of Marks
// (AdmitTable). Many processes may call it at once, as replicas that
// start together do. On PostgreSQL, whose CREATE TABLE IF NOT EXISTS
// fails when another session creates the same table at the same moment,
// the callers take turns (an advisory lock of the transaction's). In
// every dialect, a creation that fails while the tables exist afterwards
// is a success.
func (f *Fence) CreateTable(ctx context.Context, db *sql.DB) error {
	err := f.createTables(ctx, db)
	if err != nil && f.tablesExist(ctx, db) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fencesql: create table %s: %w", f.table, err)
	}
	return nil
}

// createTables runs DDL and AdmitDDL on a connection of its own: on
// PostgreSQL in one transaction, after the advisory lock of the
// table's creation.
func (f *Fence) createTables(ctx context.Context, db *sql.DB) (err error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if f.dialect == PostgreSQL {
		if _, err := c.ExecContext(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
			return err
		}
		defer func() {
			end := "COMMIT"
			if err != nil {
				end = "ROLLBACK"
			}
			if _, e := c.ExecContext(ctx, end); e != nil {
				// Not back to the pool inside a transaction.
				_ = c.Raw(func(any) error { return driver.ErrBadConn })
				if err == nil {
					err = e
				}
			}
		}()
		if _, err := c.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", f.lockID("\x00create table")); err != nil {
			return err
		}
	}
	for _, ddl := range []string{f.DDL(), f.AdmitDDL()} {
		if _, err := c.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	return nil
}

// tablesExist reports whether both tables exist in db (a query of
// their columns succeeds).
func (f *Fence) tablesExist(ctx context.Context, db *sql.DB) bool {
	for _, t := range []string{f.table, f.AdmitTable()} {
		rows, err := db.QueryContext(ctx, "SELECT fence_key FROM "+t+" WHERE 1 = 0")
		if err != nil {
			return false
		}
		rows.Close()
	}
	return true
}
