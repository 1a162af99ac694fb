//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/internal/ferretserve"
)

const serverUsage = `Usage: dsync server [--addr HOST:PORT] [--data DIR]

Runs an embedded MongoDB-compatible server (FerretDB 1.24 on SQLite) until
interrupted (Ctrl-C, SIGTERM), for local development and trying dsync out.
Point the other commands at it with --uri or MONGODB_URI. In production,
use MongoDB itself.

Flags:
  --addr HOST:PORT   where to listen (default 127.0.0.1:27017)
  --data DIR         keep the data in DIR (default: a temporary directory,
                     removed on exit)

Exit status: 0 after an interrupt; 1 if the server cannot start; 2: usage error.
`

var serverCmd = &command{
	name:    "server",
	summary: "run an embedded MongoDB-compatible server for local development",
	usage:   serverUsage,
	run:     runServer,
}

func runServer(g *globals, args []string) int {
	fs := newFlagSet("server", g)
	addr := fs.String("addr", "127.0.0.1:27017", "")
	data := fs.String("data", "", "")
	pos, _, code, err := parseArgs(fs, serverUsage, args, false)
	if err != nil {
		return code
	}
	if len(pos) > 0 {
		return usageError("server", fmt.Errorf("unexpected argument %q", pos[0]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv, err := startEmbedded(*addr, *data, os.Stderr)
	if err != nil {
		return fail("server", exitFailure, err)
	}
	where := "data in " + srv.dir
	if srv.temporary {
		where = "data in " + srv.dir + ", removed on exit"
	}
	fmt.Printf("dsync server: FerretDB listening on %s (%s)\n", strings.TrimSuffix(strings.TrimPrefix(srv.URI, "mongodb://"), "/"), where)
	fmt.Printf("  export MONGODB_URI=%s\n", srv.URI)
	fmt.Printf("Ctrl-C to stop.\n")
	select {
	case <-ctx.Done():
	case <-srv.Done(): // Run returned on its own
	}
	fmt.Printf("dsync server: stopping\n")
	if err := srv.stop(); err != nil {
		return fail("server", exitFailure, err)
	}
	return exitOK
}

// An embedded server is FerretDB running in this process.
type embedded struct {
	*ferretserve.Server
	dir       string
	temporary bool // dir is removed by stop
}

// startEmbedded starts FerretDB on addr with its SQLite data in dir (a new
// temporary directory if dir is empty). FerretDB logs every failed command
// (the driver's endSessions, for one), so only its errors go to logw, and
// nothing when logw is nil.
func startEmbedded(addr, dir string, logw io.Writer) (*embedded, error) {
	e := &embedded{}
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "dsync-server-"); err != nil {
			return nil, err
		}
		e.temporary = true
	} else {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	e.dir = dir
	handler := slog.Handler(slog.DiscardHandler)
	if logw != nil {
		handler = slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelError})
	}
	if e.Server, err = ferretserve.Start(dir, addr, slog.New(handler)); err != nil {
		e.removeTemp()
		if strings.Contains(err.Error(), "address already in use") {
			return nil, fmt.Errorf("cannot listen on %s: address already in use (another server running? pick one with --addr)", addr)
		}
		return nil, fmt.Errorf("starting FerretDB: %w", err)
	}
	return e, nil
}

// stopTimeout bounds a graceful stop: FerretDB waits 3 s for connected
// clients before closing their connections.
const stopTimeout = 10 * time.Second

// stop stops the server and removes a temporary data directory.
func (e *embedded) stop() error {
	if err := e.Stop(stopTimeout); err != nil {
		return err
	}
	e.removeTemp()
	return nil
}

func (e *embedded) removeTemp() {
	if e.temporary {
		_ = os.RemoveAll(e.dir)
	}
}
