// Command ferretserver is the embedded FerretDB (v1.24, SQLite handler)
// that the test harness (github.com/go-dsync/dsync/internal/testbed/mongotest)
// starts as a child process when neither MONGODB_URI nor Docker gives it a
// server. It lives in this module, not the library's, so that the library
// module never requires FerretDB: mongotest builds it with `go build` from
// this directory.
//
// Usage:
//
//	ferretserver -dir DATADIR [-addr 127.0.0.1:0] [-log error] [-postgresql URL]
//
// With -postgresql it runs FerretDB's PostgreSQL backend on that database
// (which must exist) instead of SQLite in DATADIR. It creates DATADIR, prints the server's URI as one line on stdout once it
// listens, and serves until SIGTERM or SIGINT arrives or its stdin reaches
// EOF (the parent is done with it, or died). Errors go to stderr, exit
// status 3.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/go-dsync/dsync/internal/ferretserve"
)

func main() {
	dir := flag.String("dir", "", "data directory (created if missing; required)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address; port 0 picks one")
	logLevel := flag.String("log", "error", "FerretDB log level: debug, info, warn or error")
	pgURL := flag.String("postgresql", "", "run FerretDB's PostgreSQL backend on this database (postgres://user@host:port/db) instead of SQLite in DATADIR")
	flag.Parse()
	if *dir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: ferretserver -dir DATADIR [-addr HOST:PORT] [-log LEVEL] [-postgresql URL]")
		os.Exit(2)
	}

	level := slog.LevelError
	switch strings.ToLower(*logLevel) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	if err := ferretserve.ServeChildConfig(context.Background(), ferretserve.Config{Dir: *dir, Addr: *addr, PostgreSQLURL: *pgURL, Logger: logger}, os.Stdout, true); err != nil {
		fmt.Fprintf(os.Stderr, "ferretserver: %v\n", err)
		os.Exit(3)
	}
}
