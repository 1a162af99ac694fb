//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-dsync/dsync/internal/ferretserve"
)

const serverUsage = `Usage: dsync server [--addr HOST:PORT] [--data DIR | --temp]

Runs an embedded MongoDB-compatible server (FerretDB 1.24 on SQLite) until
interrupted (Ctrl-C, SIGTERM), for local development and trying dsync out.
Point the other commands at it with --uri or MONGODB_URI. In production,
use MongoDB itself.

The data is kept, by default in a directory of your own (below), so that
a restarted server still knows every lock: a server that forgot them
would give a waiter the lock while the old holder's command still ran.
(The waiter's token would still be above the old holder's: a lock's
tokens start from the server's clock, 2^20 a second since 1970, about
2^50, so they only grow unless this machine's clock is set back.) One
server at a time may use a data directory.

Flags:
  --addr HOST:PORT   where to listen (default 127.0.0.1:27017)
  --data DIR         keep the data in DIR (default %s)
  --temp             keep the data in a temporary directory, removed on
                     exit: every restart forgets all locks (their tokens
                     start again from the clock, above the old ones); only
                     for throwaway tests

Exit status: 0 after an interrupt; 1 if the server cannot start; 2: usage error.
`

// defaultServerAddr is where dsync server listens without --addr:
// MongoDB's port, on loopback only.
const defaultServerAddr = "127.0.0.1:27017"

var serverCmd = &command{
	name:    "server",
	summary: "run an embedded MongoDB-compatible server for local development",
	usage:   serverHelp(),
	run:     runServer,
}

// serverHelp is the usage text, naming the default data directory.
func serverHelp() string {
	dir, err := defaultDataDir()
	if err != nil {
		dir = "$XDG_STATE_HOME/dsync/server, or ~/.local/state/dsync/server"
	}
	return fmt.Sprintf(serverUsage, dir)
}

// defaultDataDir is where dsync server keeps its data unless told: the
// user's state directory ($XDG_STATE_HOME, ~/.local/state; on macOS
// ~/Library/Application Support), then dsync/server.
func defaultDataDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "dsync", "server"), nil
	}
	if runtime.GOOS == "darwin" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "dsync", "server"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: %w; give one with --data, or use --temp", err)
	}
	return filepath.Join(home, ".local", "state", "dsync", "server"), nil
}

func runServer(g *globals, args []string) int {
	fs := newFlagSet("server", g)
	addr := fs.String("addr", defaultServerAddr, "")
	data := fs.String("data", "", "")
	temp := fs.Bool("temp", false, "")
	pos, _, code, err := parseArgs(fs, serverHelp(), args, false)
	if err != nil {
		return code
	}
	switch {
	case len(pos) > 0:
		return usageError("server", fmt.Errorf("unexpected argument %q", pos[0]))
	case *temp && *data != "":
		return usageError("server", errors.New("--data and --temp exclude each other"))
	}
	dir := *data
	if !*temp && dir == "" {
		if dir, err = defaultDataDir(); err != nil {
			return fail("server", exitFailure, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv, err := startEmbedded(*addr, dir, os.Stderr)
	if err != nil {
		return fail("server", exitFailure, err)
	}
	var where string
	switch {
	case srv.temporary:
		where = "data in " + srv.dir + ", removed on exit"
	case srv.fresh:
		where = "data in " + srv.dir + ", new"
	default:
		where = "data in " + srv.dir + ", kept from an earlier run"
	}
	fmt.Printf("dsync server: FerretDB listening on %s (%s)\n", strings.TrimSuffix(strings.TrimPrefix(srv.URI, "mongodb://"), "/"), where)
	if srv.temporary {
		fmt.Printf("dsync server: WARNING: --temp: stopping this server forgets every lock; after a restart, a waiter\n" +
			"  gets a lock while its old holder may still run. Use --data for anything that matters.\n")
	}
	fmt.Printf("  export MONGODB_URI=%s\n", srv.URI)
	fmt.Printf("  (database %q, which dsync's commands use unless --db or the URI's path names another;\n"+
		"  in Go, client.Database(dsyncmongo.DefaultDatabase) shares their locks)\n", defaultDB)
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
	temporary bool     // dir is removed by stop
	fresh     bool     // dir held no data before
	lock      *os.File // flocked while the server runs
}

// lockFile is the file in a data directory that a server holds locked.
const lockFile = "dsync-server.lock"

// startEmbedded starts FerretDB on addr with its SQLite data in dir (a new
// temporary directory if dir is empty), which no other server may be
// using. FerretDB logs every failed command (the driver's endSessions,
// for one), so only its errors go to logw, and nothing when logw is nil.
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
	if err := e.lockDir(logw); err != nil {
		e.removeTemp()
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		e.unlock()
		e.removeTemp()
		return nil, err
	}
	e.fresh = len(entries) == 1 // the lock file alone
	handler := slog.Handler(slog.DiscardHandler)
	if logw != nil {
		handler = slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelError})
	}
	if e.Server, err = ferretserve.Start(dir, addr, slog.New(handler)); err != nil {
		e.unlock()
		e.removeTemp()
		if strings.Contains(err.Error(), "address already in use") {
			return nil, fmt.Errorf("cannot listen on %s: address already in use (another server running? pick one with --addr)", addr)
		}
		return nil, fmt.Errorf("starting FerretDB: %w", err)
	}
	return e, nil
}

// lockWait is how long a server waits for another that has its data
// directory: long enough for one that is stopping (stopTimeout).
const lockWait = stopTimeout

// lockDir takes the data directory's lock file, so that no two servers
// share one store. If another server has it, lockDir waits up to lockWait
// for that one to exit (saying so on logw, if not nil).
func (e *embedded) lockDir(logw io.Writer) error {
	f, err := os.OpenFile(filepath.Join(e.dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		// Perhaps a server that is stopping (FerretDB gives its clients
		// a few seconds): wait for it a little, saying so.
		owner, _ := io.ReadAll(f)
		who := "another dsync server"
		if pid := strings.TrimSpace(string(owner)); pid != "" {
			who += " (pid " + pid + ")"
		}
		if logw != nil {
			fmt.Fprintf(logw, "dsync server: data directory %s is in use by %s; waiting up to %v for it to exit\n", e.dir, who, lockWait)
		}
		for deadline := time.Now().Add(lockWait); errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return fmt.Errorf("data directory %s is in use by %s; give this one another --data", e.dir, who)
		}
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	e.lock = f
	return nil
}

func (e *embedded) unlock() {
	if e.lock != nil {
		e.lock.Close() // releases the flock
		e.lock = nil
	}
}

// stopTimeout bounds how long another server's stop can take: this
// process's exit follows stopGrace at the latest.
const stopTimeout = 10 * time.Second

// stopGrace is how long a stop waits for FerretDB to stop. FerretDB then
// waits 3 s more for connected clients to disconnect (a waiting dsync
// lock's, a pooled connection), which made a restart fail, or wait, for
// seconds; the process does not wait for that: its exit closes their
// connections, which clients handle as they do a server that stopped
// (they connect again), and SQLite keeps the data consistent as it does
// across any crash.
const stopGrace = 500 * time.Millisecond

// stop stops the server, or leaves the rest of its stop to the process's
// exit, and releases the data directory (removing a temporary one).
func (e *embedded) stop() error {
	_ = e.Stop(stopGrace)
	e.unlock()
	e.removeTemp()
	return nil
}

func (e *embedded) removeTemp() {
	if e.temporary {
		_ = os.RemoveAll(e.dir)
	}
}
