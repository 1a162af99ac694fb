// Package ferretserve runs an embedded FerretDB (v1.24, SQLite handler, or
// its PostgreSQL handler over a PostgreSQL the caller runs):
// the MongoDB-compatible server behind `dsync server`, `dsync demo`, the
// test harness (through cmd/ferretserver) and the benchmarks. It is its own
// module, github.com/go-dsync/dsync/internal/ferretserve, so that the
// library module never requires FerretDB; library packages must not import it.
//
// The module requires modernc.org/sqlite v1.59.0 or later, not the v1.31.1
// FerretDB 1.24 was built with. That version left a connection stuck (stale
// reads, then "interrupted" on every statement) when a client gave up on a
// query at the wrong moment. sqlitedriver_test.go fails with it. Do not
// downgrade.
//
// On PostgreSQL a start is checked: FerretDB must know every database
// PostgreSQL holds for it, or it is started again (pgregistry.go).
package ferretserve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/build/version"
	"github.com/FerretDB/FerretDB/ferretdb"
)

// Server is FerretDB running in this process.
type Server struct {
	URI    string
	cancel context.CancelFunc
	done   chan struct{} // closed when FerretDB's Run has returned
}

// Config says which FerretDB to run.
type Config struct {
	// Dir holds the SQLite data (it must exist). With PostgreSQLURL set,
	// nothing is stored there.
	Dir string
	// Addr is the listen address ("127.0.0.1:0" picks a port).
	Addr string
	// PostgreSQLURL, when set, runs FerretDB's PostgreSQL backend on that
	// database (postgres://user@host:port/dbname) instead of SQLite.
	PostgreSQLURL string
	// Logger gets FerretDB's log. FerretDB logs every failed command (the
	// driver's endSessions, for one) at Warn, so callers usually pass a
	// logger at Error level.
	Logger *slog.Logger
}

// Start runs FerretDB with its SQLite data in dir (which must exist),
// listening on addr ("127.0.0.1:0" picks a port), logging to logger.
// It indexes _id so that point reads do not scan (idindex.go).
func Start(dir, addr string, logger *slog.Logger) (*Server, error) {
	return StartConfig(Config{Dir: dir, Addr: addr, Logger: logger})
}

// StartConfig runs the FerretDB cfg describes. On either backend it adds
// the indexes FerretDB's own queries can use (idindex.go, pgindex.go). On
// PostgreSQL it checks that FerretDB knows every database PostgreSQL holds
// for it, and starts it again when it does not (pgregistry.go says why).
func StartConfig(cfg Config) (*Server, error) {
	reportVersion.Do(func() {
		// FerretDB reads its version from files that only its own
		// builds carry: embedded, it answers buildInfo (and dsync
		// doctor) with ferretdbVersion "unknown". The module's version
		// is the true one.
		if v := version.Get(); v.Version == "unknown" {
			v.Version = Version()
		}
	})
	if cfg.PostgreSQLURL == "" {
		return startOnce(cfg, "")
	}
	pgURL, err := withCustomPlans(cfg.PostgreSQLURL) // pgindex.go says why
	if err != nil {
		return nil, err
	}
	return startOnPostgreSQL(cfg, pgURL)
}

// startOnce runs FerretDB once: on SQLite in cfg.Dir when pgURL is empty,
// else on PostgreSQL at pgURL.
func startOnce(cfg Config, pgURL string) (*Server, error) {
	fc := &ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: cfg.Addr},
		Handler:   "sqlite",
		SQLiteURL: "file:" + strings.TrimSuffix(cfg.Dir, "/") + "/",
		Logger:    cfg.Logger,
	}
	var indexer func(context.Context)
	if pgURL != "" {
		fc.Handler, fc.SQLiteURL, fc.PostgreSQLURL = "postgresql", "", pgURL
		indexer = newPGIndexer(pgURL, cfg.Logger).run
	} else {
		indexer = newIDIndexer(cfg.Dir).run
	}
	f, err := ferretdb.New(fc)
	if err != nil {
		return nil, fmt.Errorf("ferretdb.New: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel, done: make(chan struct{})}
	indexed := make(chan struct{})
	go func() {
		defer close(indexed)
		indexer(ctx)
	}()
	go func() {
		defer close(s.done)
		_ = f.Run(ctx)
		<-indexed
	}()
	s.URI = f.MongoDBURI() // blocks until the listener is up
	return s, nil
}

// Done is closed when the server has stopped, on its own or by Stop.
func (s *Server) Done() <-chan struct{} { return s.done }

// Stop stops the server and waits up to timeout for it. FerretDB gives
// connected clients 3 s to disconnect before closing their connections.
func (s *Server) Stop(timeout time.Duration) error {
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("FerretDB did not stop within %v", timeout)
	}
}

// ServeChild is the body of a process that serves FerretDB for its parent:
// it creates dir, starts the server, writes its URI as one line to uriOut,
// and returns once ctx ends, SIGTERM or SIGINT arrives, or — with
// watchStdin — stdin reaches EOF (the parent is done with it, or died).
func ServeChild(ctx context.Context, dir, addr string, logger *slog.Logger, uriOut io.Writer, watchStdin bool) error {
	return ServeChildConfig(ctx, Config{Dir: dir, Addr: addr, Logger: logger}, uriOut, watchStdin)
}

// ServeChildConfig is [ServeChild] for the FerretDB cfg describes.
func ServeChildConfig(ctx context.Context, cfg Config, uriOut io.Writer, watchStdin bool) error {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return err
	}
	// The parent may close its end of our stdout after reading the URI
	// line: later writes must fail with EPIPE rather than kill us.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	if watchStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	s, err := StartConfig(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(uriOut, s.URI)
	<-ctx.Done()
	return s.Stop(10 * time.Second)
}

// reportVersion sets, once, the version FerretDB reports.
var reportVersion sync.Once

// Version returns the version of FerretDB built into this binary.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/FerretDB/FerretDB" {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}
