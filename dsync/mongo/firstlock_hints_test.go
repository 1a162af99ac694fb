package dsyncmongo

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestFirstLockLeavesHintSetupOffItsPath: a fresh process given no
// ClientWithHints, on the test server (reached over loopback: hints on
// by default), does not wait in its first Lock+Unlock for what hints
// need: whatsmyuri and explain (whether the server is reached over
// loopback), the hint key and the peers' records. The command monitor
// holds each of those commands back until the Lock+Unlock has
// returned, which it could not if one of them were on its path. Its
// first Lock+Unlock sends no command that a process with hints off
// does not send its own (the lock protocol's, counted as
// protocolCommands counts them), and hints still come on after: the
// process records itself for them.
func TestFirstLockLeavesHintSetupOffItsPath(t *testing.T) {
	onLoopback(t)
	if mongotest.Shared(t).Backend() == mongotest.BackendPostgreSQL {
		t.Skip("FerretDB on PostgreSQL does not count as loopback")
	}
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	defaultClient(t, ctx, db, nil) // the deployment's first process: collections, hint key
	off, offHeld, _ := firstLockHeldBack(t, ctx, db, "first-off", dsync.ClientWithHints("", ""))
	on, onHeld, st := firstLockHeldBack(t, ctx, db, "first-on")
	if len(offHeld) != 0 {
		t.Errorf("held back %v with hints off", offHeld)
	}
	if len(off) == 0 || len(on) == 0 {
		t.Fatalf("first Lock+Unlock sent %v with hints off, %v by default: nothing counted", off, on)
	}
	for cmd, n := range on {
		if n > off[cmd] {
			t.Errorf("with hints by default, the first Lock+Unlock sent %d %q, against %d with hints off", n, cmd, off[cmd])
		}
	}
	// Hints come on after: the transport is made, and records itself.
	for {
		f := st.feed()
		var ps []driver.Peer
		var err error
		if f != nil {
			ps, err = st.Roles().Peers.Peers(ctx, time.Time{})
			if err == nil && slices.ContainsFunc(ps, func(p driver.Peer) bool { return p.ID == f.ID() }) {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("the process given no ClientWithHints never took hints: transport %v, peers %v, %v", f, ps, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("first Lock+Unlock, hints off: %v; by default: %v, with %v held back until it returned", off, on, onHeld)
}

// hintSetup reports whether e is a command that only direct hints need:
// whether the server is reached over loopback (whatsmyuri; explain, on
// FerretDB; on a replica set the hello that follows whatsmyuri, not
// held: the probe's hello sends the same command), the hint key or a
// peer's record (their _ids begin with "#hint/").
func hintSetup(e *event.CommandStartedEvent) bool {
	switch e.CommandName {
	case "whatsmyuri", "explain":
		return true
	}
	return bytes.Contains(e.Command, []byte("#hint/"))
}

// firstLockHeldBack makes a fresh process on db (copts its Client's
// options) and its first Lock+Unlock of key, while every command that
// hints need is held back until the Lock+Unlock has returned. It
// returns the lock protocol's commands that the Lock+Unlock sent
// (protocolCommands), the names of those held back meanwhile, and the
// process's store, with its hint transport once made.
func firstLockHeldBack(t *testing.T, ctx context.Context, db *mongo.Database, key string, copts ...dsync.ClientOption) (map[string]int, []string, *hintedStore) {
	t.Helper()
	var (
		mu       sync.Mutex
		counting = true
		sent     = map[string]int{}
		held     []string
		waited   bool // a command held back was let go before the Lock+Unlock returned
		released = make(chan struct{})
	)
	mon := options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if hintSetup(e) {
			mu.Lock()
			if counting {
				held = append(held, e.CommandName)
			}
			mu.Unlock()
			// The driver sends e once this returns. Generous: the
			// Lock+Unlock takes milliseconds, unless it waits for e.
			select {
			case <-released:
			case <-time.After(10 * time.Second):
				mu.Lock()
				waited = waited || counting
				mu.Unlock()
			}
			return
		}
		coll, _ := e.Command.Index(0).Value().StringValueOK()
		if kindOf(e) == clockSample || coll == DefaultCollection+sessionsSuffix || coll == DefaultCollection+keysSuffix {
			return
		}
		mu.Lock()
		if counting {
			sent[e.CommandName+" "+coll]++
		}
		mu.Unlock()
	}})
	st, err := NewStore(mongotest.SameDatabase(t, db, mon), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	hs := &hintedStore{Store: st}
	hooked := clienthook.Wrap[driver.Store](st, clienthook.Settings{Hints: func(f *hint.Feed) {
		hs.mu.Lock()
		hs.f = f
		hs.mu.Unlock()
	}})
	c, err := dsync.NewClient(hooked, append([]dsync.ClientOption{dsync.ClientWithLogger(slog.New(slog.DiscardHandler))}, copts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	defer func() {
		select {
		case <-released:
		default:
			close(released)
		}
	}()
	m := newMutex(t, c, key)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second) // as generous
	defer cancel()
	err = m.LockContext(lctx)
	if err == nil {
		err = m.UnlockContext(lctx)
	}
	mu.Lock()
	counting = false
	out, outHeld, onPath := sent, held, waited
	mu.Unlock()
	close(released)
	if onPath || err != nil {
		t.Fatalf("the first Lock+Unlock waited for %v, held back (%v)", outHeld, err)
	}
	return out, outHeld, hs
}

// hintedStore is a process's store, and its Client's hint transport once
// made (nil before, or if none).
type hintedStore struct {
	*Store
	mu sync.Mutex
	f  *hint.Feed
}

func (h *hintedStore) feed() *hint.Feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.f
}
