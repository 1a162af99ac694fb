//go:build unix

package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	dsyncmongo "github.com/go-dsync/dsync/dsync/mongo"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// infoLog keeps the messages logged at Info.
type infoLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *infoLog) Enabled(_ context.Context, lv slog.Level) bool { return lv == slog.LevelInfo }
func (l *infoLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *infoLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *infoLog) WithGroup(string) slog.Handler      { return l }

// TestHintsOff: --hints off turns direct hints off where the server is
// reached over loopback, where they are on by default: the command's
// Client does not say, once it has settled how it follows its store's
// feed, that the default turned them on (as it does without the flag, on
// the embedded server). A Client asks the store whether to take them in
// the background, after its first session opens: the test waits until
// it has settled (clienthook.Settings.Settled) before it looks.
func TestHintsOff(t *testing.T) {
	srv := mongotest.Shared(t)
	if srv.Backend() != mongotest.BackendSQLite {
		t.Skip("needs the embedded FerretDB on SQLite, where hints are on by default")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := mongotest.NewDatabase(t)
	for _, c := range []struct {
		args []string
		on   bool
	}{{nil, true}, {[]string{"--hints", "off"}, false}} {
		g := &globals{}
		fs := newFlagSet("lock", g)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		var log infoLog
		logger := slog.New(&log)
		store, err := dsyncmongo.NewStore(mongotest.SameDatabase(t, db), dsyncmongo.WithCollection(g.collection), dsyncmongo.WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		settled := make(chan struct{})
		hooked := clienthook.Wrap[driver.Store](store, clienthook.Settings{Settled: func() { close(settled) }})
		locks, err := dsync.NewClient(hooked, g.clientOptions(logger, 0)...)
		if err != nil {
			t.Fatal(err)
		}
		m, err := dsync.NewMutex(locks, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.UnlockContext(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-settled:
		case <-ctx.Done():
			t.Fatalf("dsync %v: the Client never settled its feed", c.args)
		}
		locks.Close()
		said := false
		for _, msg := range log.msgs {
			said = said || strings.Contains(msg, "direct hints on by default")
		}
		if said != c.on {
			t.Errorf("dsync %v: the Client logged %q; want hints on by default: %v", c.args, log.msgs, c.on)
		}
	}
}
