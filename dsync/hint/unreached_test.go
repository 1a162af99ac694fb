package hint_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestHintsThatReachNoOneCostALookPerPoll: processes that take hints
// that reach no one (each advertises an address where nobody listens,
// as processes in different network namespaces do whose server each
// sees on loopback) still hand over, through the store's events; but a
// waiter, hearing no Held hint from its claim's owner, looks every poll
// interval, a read of the store each time, as long as it waits (without
// hints it would rely on the events, and look every safety poll once
// its announcement is a second old): what dsync.ClientWithHints and
// docs/mutex.md say.
func TestHintsThatReachNoOneCostALookPerPoll(t *testing.T) {
	const poll = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store := memory.New()
	mk := func() (*dsync.Client, *counting) {
		st := countingOn(store)
		c, err := dsync.NewClient(st, dsync.ClientWithLogger(quiet), dsync.ClientWithIdleAge(0),
			dsync.ClientWithHints("127.0.0.1:0", "127.0.0.1:9"), // the discard port: hints reach no one
			dsync.ClientWithPollInterval(poll), dsync.ClientWithSafetyPoll(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, st
	}
	a, _ := mk()
	b, bs := mk()
	held, waiter := mutex(t, a, "k"), mutex(t, b, "k")
	if err := held.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- waiter.LockContext(ctx) }()
	// Past the announcement's first second of looks at doubling
	// intervals, the waiter still reads the store every poll interval:
	// 100 reads take 2 s or more.
	before := bs.reads.Load()
	for bs.reads.Load()-before < 100 {
		select {
		case err := <-locked:
			t.Fatalf("the waiter holds while the key is held: %v", err)
		case <-ctx.Done():
			t.Fatalf("the waiter read the store %d times while it waited, want it to look every poll interval", bs.reads.Load()-before)
		case <-time.After(poll):
		}
	}
	held.Unlock()
	if err := <-locked; err != nil {
		t.Fatalf("the waiter was not handed the key: %v", err)
	}
	waiter.Unlock()
}
