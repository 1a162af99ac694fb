package dsync_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// slowView returns a view of mem that reads no runs of a key's queue, as
// the MongoDB driver on FerretDB, and answers each request lag after it
// was sent (applied at once: a reply its sender gave up on is lost, the
// request is not).
func slowView(mem *memory.Store, lag time.Duration, sent *atomic.Int64) *memory.Store {
	return mem.Intercept(func(ctx context.Context, c memory.Call, serve func() error) error {
		if c.Op == "GetRun" {
			return driver.ErrRunsUnsupported
		}
		if sent != nil {
			sent.Add(1)
		}
		err := serve()
		if lag > 0 {
			select {
			case <-time.After(lag):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return err
	})
}

// TestClaimOnASlowStoreKeepsItsClimb: a process that knows nothing of a
// key whose queue has many ended claims (waiters that gave up, or claims
// withdrawn when their session retired: what a slow store piles up)
// looks for where the queue ends by reads by ID before it inserts its
// claim, and a claim has the TTL minus the margin to land. On a store
// that reads no runs and answers each request in 200 ms (TTL 2 s), that
// look takes longer than the bound. What the reads found must be kept
// for the next attempt, which then starts above it; before, each attempt
// started again from the bottom of the segment and ran out of time at
// the same place, keeping only its four lost inserts, and the claim
// queued only after many more TTLs than the bound below. On a busy key,
// each attempt that runs out of time may add to its queue (a withdrawn
// insert of unknown outcome), so there it may never queue.
func TestClaimOnASlowStoreKeepsItsClimb(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			ttl     = 2 * time.Second
			lag     = 200 * time.Millisecond
			gaveUp  = 96 // waiters that gave up: ended claims above the holder's
			queueIn = 20 * ttl
		)
		mem := memory.New()
		fast := newClient(t, slowView(mem, 0, nil), dsync.ClientWithTTL(ttl))
		holder := newMutex(t, fast, "k")
		holder.Lock()
		quitter := newMutex(t, fast, "k")
		for range gaveUp {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			err := quitter.LockContext(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a waiter behind the holder: %v, want its context's deadline", err)
			}
		}
		holder.Unlock()
		if q, err := statuspage.NewReader(fast).Queue(context.Background(), "k"); err != nil || len(q) != 0 {
			t.Fatalf("queue before the slow process claims: %v, %v; want it empty", q, err)
		}

		var sent atomic.Int64
		slow := newClient(t, slowView(mem, lag, &sent), dsync.ClientWithTTL(ttl))
		m := newMutex(t, slow, "k")
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		locked := make(chan error, 1)
		go func() { locked <- m.LockContext(ctx) }()
		queued := false
		for !queued && time.Since(start) < queueIn {
			time.Sleep(100 * time.Millisecond)
			q, err := statuspage.NewReader(fast).Queue(context.Background(), "k")
			queued = err == nil && len(q) > 0
		}
		if !queued {
			cancel()
			t.Fatalf("no claim queued within %v (fake time) on a store answering in %v, with %d ended claims in the queue (%d requests; Lock: %v)",
				queueIn, lag, gaveUp, sent.Load(), <-locked)
		}
		queuedAfter := time.Since(start)
		if err := <-locked; err != nil {
			t.Fatalf("Lock after its claim queued: %v", err)
		}
		t.Logf("queued after %v, held after %v (fake time; the walk reads two documents per ended claim), %d requests",
			queuedAfter, time.Since(start), sent.Load())
		m.Unlock()
	})
}
