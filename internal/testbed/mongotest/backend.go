package mongotest

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// envBackend chooses the embedded FerretDB's backend: "sqlite" (the
// default) or "postgresql", over a PostgreSQL the harness starts itself.
const envBackend = "DSYNC_MONGOTEST_BACKEND"

// Backends of the embedded FerretDB, returned by [Server.Backend].
const (
	BackendSQLite     = "sqlite"
	BackendPostgreSQL = "postgresql"
)

// embeddedBackend returns the backend DSYNC_MONGOTEST_BACKEND asks for.
func embeddedBackend() (string, error) {
	switch b := strings.ToLower(os.Getenv(envBackend)); b {
	case "", BackendSQLite:
		return BackendSQLite, nil
	case BackendPostgreSQL, "postgres", "pg":
		return BackendPostgreSQL, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q or %q", envBackend, b, BackendSQLite, BackendPostgreSQL)
	}
}

// sharedPG is the PostgreSQL of a test binary, started on first use and
// stopped by [Run]: the shared server and every [StartProcess] keep
// their data there, each in a database of its own.
var sharedPG struct {
	once sync.Once
	mu   sync.Mutex
	p    *postgres
	err  error
}

// sharedPostgres returns the test binary's PostgreSQL, starting it on
// first use.
func sharedPostgres() (*postgres, error) {
	sharedPG.once.Do(func() {
		p, err := startPostgres()
		sharedPG.mu.Lock()
		sharedPG.p, sharedPG.err = p, err
		sharedPG.mu.Unlock()
	})
	sharedPG.mu.Lock()
	defer sharedPG.mu.Unlock()
	return sharedPG.p, sharedPG.err
}

// stopSharedPostgres stops the test binary's PostgreSQL, if it started one.
func stopSharedPostgres() {
	sharedPG.mu.Lock()
	defer sharedPG.mu.Unlock()
	if sharedPG.p != nil {
		sharedPG.p.Stop()
		sharedPG.p, sharedPG.err = nil, fmt.Errorf("PostgreSQL already stopped (mongotest.Run returned)")
	}
}

// embeddedPostgresDatabase returns, when DSYNC_MONGOTEST_BACKEND asks for
// PostgreSQL, the URL of a new database on the test binary's PostgreSQL
// for one FerretDB; otherwise "".
func embeddedPostgresDatabase() (string, error) {
	backend, err := embeddedBackend()
	if err != nil || backend != BackendPostgreSQL {
		return "", err
	}
	pg, err := sharedPostgres()
	if err != nil {
		return "", fmt.Errorf("PostgreSQL for the embedded FerretDB (%s=%s): %w", envBackend, backend, err)
	}
	name, err := pg.NewDatabase("ferretdb")
	if err != nil {
		return "", err
	}
	return pg.URL(name), nil
}
