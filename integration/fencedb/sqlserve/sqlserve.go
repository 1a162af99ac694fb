// Package sqlserve gives fence/fencesql's tests a database of each
// dialect: PostgreSQL (internal/testbed/pgserve) and MariaDB (Debian's
// mariadb-server), each started once per test binary on a loopback port
// on first use, and SQLite in a file of the test's. Each call makes a new
// database, so tests do not share tables.
//
// A server whose programs are not installed skips the test, or fails it
// when DSYNC_FENCEDB_REQUIRED=1 (as .ci/run sets it).
package sqlserve

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/go-dsync/dsync/fence/fencesql"
	"github.com/go-dsync/dsync/internal/testbed/pgserve"
)

// EnvRequired, set to 1, makes a missing server fail the test rather than
// skip it.
const EnvRequired = "DSYNC_FENCEDB_REQUIRED"

// Dialects are the dialects the harness serves, in the order tests run
// them.
var Dialects = []fencesql.Dialect{fencesql.PostgreSQL, fencesql.MySQL, fencesql.SQLite}

// Main runs m's tests, then stops the servers they started.
func Main(m *testing.M) {
	code := m.Run()
	pg.stop()
	maria.stop()
	os.Exit(code)
}

// A Server started once per test binary, on first use.
type shared[S any] struct {
	once sync.Once
	mu   sync.Mutex
	s    S
	err  error
	halt func(S)
}

func (sh *shared[S]) get(start func() (S, error)) (S, error) {
	sh.once.Do(func() {
		s, err := start()
		sh.mu.Lock()
		sh.s, sh.err = s, err
		sh.mu.Unlock()
	})
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.s, sh.err
}

func (sh *shared[S]) stop() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.err == nil && sh.halt != nil {
		var zero S
		if any(sh.s) != any(zero) {
			sh.halt(sh.s)
		}
	}
	sh.err = fmt.Errorf("sqlserve: the server was stopped (sqlserve.Main returned)")
}

var (
	pg    = shared[*pgserve.Server]{halt: (*pgserve.Server).Stop}
	maria = shared[*mariaDB]{halt: (*mariaDB).stop}
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sqlserve: "+format+"\n", args...)
}

// missing skips tb, or fails it under DSYNC_FENCEDB_REQUIRED=1.
func missing(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv(EnvRequired) == "1" {
		tb.Fatalf("%v (%s=1)", err, EnvRequired)
	}
	tb.Skipf("%v (set %s=1 to fail instead)", err, EnvRequired)
}

// Open returns a new, empty database of dialect d, closed at the end of
// tb.
func Open(tb testing.TB, d fencesql.Dialect) *sql.DB {
	tb.Helper()
	var db *sql.DB
	var err error
	switch d {
	case fencesql.PostgreSQL:
		db, err = openPostgres(tb)
	case fencesql.MySQL:
		db, err = openMariaDB(tb)
	case fencesql.SQLite:
		db, err = sql.Open("sqlite", "file:"+filepath.Join(tb.TempDir(), "fence.db")+
			// Writers wait for the write lock for up to 30 s instead
			// of failing with SQLITE_BUSY at once.
			"?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)")
	default:
		err = fmt.Errorf("sqlserve: no dialect %v", d)
	}
	if err != nil {
		tb.Fatal(err)
	}
	KeepIdle(db)
	tb.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		tb.Fatalf("%v: %v", d, err)
	}
	return db
}

// KeepIdle lets db keep as many idle connections as the tests use at
// once, as a service's pool is sized. database/sql keeps 2 by default
// and closes the rest as they come back; PostgreSQL forks a server
// process for each new connection, and the conformance suite's parallel
// trials then spent most of their time starting and ending them.
func KeepIdle(db *sql.DB) {
	db.SetMaxIdleConns(64)
}

func openPostgres(tb testing.TB) (*sql.DB, error) {
	tb.Helper()
	if _, err := pgserve.BinDir(); err != nil {
		missing(tb, err)
	}
	p, err := pg.get(func() (*pgserve.Server, error) {
		return pgserve.Start(pgserve.Options{DirPrefix: "dsync-fencedb-pg-", MaxConnections: 300, Logf: logf})
	})
	if err != nil {
		return nil, err
	}
	name, err := p.NewDatabase("fence")
	if err != nil {
		return nil, err
	}
	return sql.Open("pgx", p.URL(name))
}

func openMariaDB(tb testing.TB) (*sql.DB, error) {
	tb.Helper()
	if _, _, err := mariaDBBins(); err != nil {
		missing(tb, err)
	}
	m, err := maria.get(startMariaDB)
	if err != nil {
		return nil, err
	}
	return m.newDatabase()
}
