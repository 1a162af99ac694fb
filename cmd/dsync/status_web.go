//go:build unix

package main

// dsync status --web: the live page of statuspage, served from the
// command line, reading the store as dsync status does.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/go-dsync/dsync/clockcheck"
	"github.com/go-dsync/dsync/statuspage"
)

// defaultWebAddr is where --web listens without --addr: loopback only,
// so that the page is not shown to the network unless asked for.
const defaultWebAddr = "127.0.0.1:8046"

// serveStatusPage serves the status page of db on addr until SIGINT or
// SIGTERM.
func serveStatusPage(g *globals, db *mongo.Database, f statusFlags) int {
	locks, store, err := g.lockClient(db, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		return fail("status", exitFailure, err)
	}
	defer locks.Close()
	members, err := g.memberStore(store)
	if err != nil {
		return fail("status", exitFailure, err)
	}
	page := statuspage.New(statuspage.Config{
		Client: locks, Members: members, Seen: f.seen, Timeout: g.timeout,
		Now: func(ctx context.Context) (time.Time, error) {
			// A database without the collection lists nothing: say
			// why, rather than show an empty store.
			if !collectionExists(ctx, db, g.collection) {
				err := fmt.Errorf("%s has no collection %s: nothing uses dsync there (check --db and --collection)", g.db, g.collection)
				if hint := g.elsewhereHint(elsewhere(ctx, db.Client(), g.db, g.collection)); hint != "" {
					err = fmt.Errorf("%w; %s", err, hint)
				}
				return time.Time{}, err
			}
			s, err := clockcheck.Measure(ctx, db, clockcheck.WithSamples(1))
			if err != nil && errors.Is(context.Cause(ctx), errAllDown) {
				return time.Time{}, context.Cause(ctx) // the server is gone (whileReachable)
			}
			return s.ServerTime.Add(s.RTT / 2), err
		},
	})
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fail("status", exitFailure, listenError(f.addr, err))
	}
	srv := &http.Server{Handler: reachableHandler{g: g, h: page}, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "dsync status: serving %s.%s on http://%s/ (Ctrl-C stops)\n", g.db, g.collection, ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail("status", exitFailure, err)
	}
	return exitOK
}

// listenError says why the page cannot be served on addr, and how to
// serve it elsewhere: the default address is taken by the first dsync
// status --web of the machine.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("cannot serve the page on %s: address already in use (another dsync status --web?); "+
			"pick another with --addr HOST:PORT, or --addr 127.0.0.1:0 for any free port", addr)
	}
	return fmt.Errorf("cannot serve the page on %s: %w; pick another address with --addr HOST:PORT", addr, err)
}

// reachableHandler serves each request of the page with a context that ends as
// soon as the server is known to be unreachable (globals.whileReachable),
// so that the page says so at once, as dsync status does, rather than
// wait out --timeout and say "context deadline exceeded".
type reachableHandler struct {
	g *globals
	h http.Handler
}

func (rh reachableHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, stop := rh.g.whileReachable(r.Context())
	defer stop()
	rh.h.ServeHTTP(w, r.WithContext(ctx))
}
