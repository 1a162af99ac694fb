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
// Client does not say, as it takes its first lock, that the default
// turned them on (as it does without the flag, on the embedded server).
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
		locks, _, err := g.lockClient(mongotest.SameDatabase(t, db), slog.New(&log), 0)
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
