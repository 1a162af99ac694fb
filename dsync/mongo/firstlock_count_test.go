package dsyncmongo

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// firstLockBound bounds the commands of a fresh process's first
// Lock+Unlock, with default options, of a key another process locked and
// unlocked moments before, beside 100 idle keys (bench/first-lock.md has
// the breakdown: 24 measured here on the embedded server, 2 of margin). The hints' setup
// (whatsmyuri, explain, the hint key and the peer record: 5 commands)
// back on that path would pass it; so would the store's feed (5 more).
const firstLockBound = 26

// TestFirstLockCommands: a fresh process given no ClientWithHints, on the
// test server (reached over loopback: hints on by default), sends at most
// firstLockBound commands in its first Lock+Unlock, none of them for
// hints in its Lock, which it sets up off that path (wake's settle.go):
// after its first claim ends (which Unlock may meet), or settleAfter (a
// second) after its session opened.
// A first Lock+Unlock slower than that (a very busy machine) may meet
// them: their count then is logged, not judged. Nor does it create the
// lock collection's index, or insert the protocol document, which the
// first process made: read first, they are there.
func TestFirstLockCommands(t *testing.T) {
	onLoopback(t)
	if mongotest.Shared(t).Backend() == mongotest.BackendPostgreSQL {
		t.Skip("FerretDB on PostgreSQL does not count as loopback")
	}
	ctx := testCtx(t, time.Minute)
	db := mongotest.NewDatabase(t)
	_, loader, _ := defaultClient(t, ctx, db, nil) // collections, index, hint key
	const keys, fresh = 100, 3
	for i := range keys {
		lockUnlockKey(ctx, t, loader, fmt.Sprintf("job-%d", i))
	}
	for i := range fresh {
		key := fmt.Sprintf("job-%d", i*37%keys)
		lockUnlockKey(ctx, t, loader, key) // the run before, moments ago
		sent, hints, unlocking, took := firstLockCommands(t, ctx, db, key)
		total := 0
		for _, n := range sent {
			total += n
		}
		t.Logf("fresh Client %d: first Lock+Unlock in %v: %d commands %v; for hints %v in Lock, %v in Unlock", i, took, total, sent, hints, unlocking)
		if total > firstLockBound {
			t.Errorf("a fresh Client's first Lock+Unlock sent %d commands (%v), want at most %d", total, sent, firstLockBound)
		}
		if sent["createIndexes"] > 0 || sent["insert "+driver.ProtocolID] > 0 {
			t.Errorf("a fresh Client sent createIndexes for an index in place, or inserted the protocol document there: %v", sent)
		}
		if len(hints) > 0 && took < time.Second {
			t.Errorf("a fresh Client's first Lock, in a Lock+Unlock of %v, sent commands for hints: %v", took, hints)
		}
	}
}

func lockUnlockKey(ctx context.Context, t *testing.T, c *dsync.Client, key string) {
	t.Helper()
	m := newMutex(t, c, key)
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// firstLockCommands makes a fresh process on db, given no ClientWithHints,
// and its first Lock+Unlock of key. It returns the commands that
// Lock+Unlock sent, by name, but those only hints need (hintSetup), by
// name, the latter sent before Lock returned apart (hints), and how long
// it took from the Client's making. The hints' setup may start once the
// first claim ends, which Unlock does before it returns: what it sends
// then is off the Lock's path, and only counted in unlocking.
func firstLockCommands(t *testing.T, ctx context.Context, db *mongo.Database, key string) (sent, hints, unlocking map[string]int, took time.Duration) {
	t.Helper()
	var mu sync.Mutex
	counting, locked := true, false
	sent, hints, unlocking = map[string]int{}, map[string]int{}, map[string]int{}
	mon := options.Client().SetMonitor(&event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !counting:
		case hintSetup(e) && locked:
			unlocking[e.CommandName]++
		case hintSetup(e):
			hints[e.CommandName]++
		case e.CommandName == "insert" && bytes.Contains(e.Command, []byte(driver.ProtocolID)):
			sent["insert "+driver.ProtocolID]++
		default:
			sent[kindOf(e)]++
		}
	}})
	st, err := NewStore(mongotest.SameDatabase(t, db, mon), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	a := time.Now()
	c, err := dsync.NewClient(st, dsync.ClientWithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m := newMutex(t, c, key)
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	locked = true
	mu.Unlock()
	if err := m.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	took = time.Since(a)
	mu.Lock()
	defer mu.Unlock()
	counting = false
	return maps.Clone(sent), maps.Clone(hints), maps.Clone(unlocking), took
}
