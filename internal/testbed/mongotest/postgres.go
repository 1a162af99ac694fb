package mongotest

import "github.com/go-dsync/dsync/internal/testbed/pgserve"

// postgres is a PostgreSQL server the harness started, for FerretDB's
// PostgreSQL backend.
type postgres = pgserve.Server

// startPostgres starts the harness's PostgreSQL.
func startPostgres() (*postgres, error) {
	return pgserve.Start(pgserve.Options{
		DirPrefix:      "dsync-mongotest-pg-",
		MaxConnections: 500, // FerretDB pools up to 50 connections per process
		Logf:           logf,
	})
}
