package dsync_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// heldStart is a store on whose link the next start of a key's queue
// (an ordered insert that begins with a gate) is held back: its sender is
// told the outcome is unknown, and the documents land only when the test
// says (a stalled connection delivering its bytes late).
type heldStart struct {
	*memory.Store
	armed atomic.Bool
	mu    sync.Mutex
	held  [][]driver.Doc
}

func (h *heldStart) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	if len(docs) > 0 && docs[0].Kind == driver.KindGate && h.armed.CompareAndSwap(true, false) {
		h.mu.Lock()
		h.held = append(h.held, slices.Clone(docs))
		h.mu.Unlock()
		return 0, errDown
	}
	return h.Store.InsertOrdered(ctx, docs)
}

// land applies the requests held back, and reports how many there were.
func (h *heldStart) land(t *testing.T) int {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, docs := range h.held {
		if _, err := h.Store.InsertOrdered(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
	n := len(h.held)
	h.held = nil
	return n
}

// TestTokensRiseAcrossAnEmptyingWithAStartHeldBack (issue 42, defect 3):
// P's TryLock starts the key's queue, but its request is held back and P
// is told it failed; 1.2 s later Q starts a queue and holds; 1.5 s later,
// with nothing held, the collections are emptied; then P's start lands.
// R, which never saw the key, locks it: its token must be above Q's, which
// was handed out more than a second before the emptying (README,
// "Guarantees"). R waits for P's stray queue to lapse first (at most three
// bucket spans): P's start recorded the store's history before the
// emptying, so nobody relies on it after.
func TestTokensRiseAcrossAnEmptyingWithAStartHeldBack(t *testing.T) {
	const ttl = 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		// Buckets of a minute: R waits at most three of them for P's
		// stray queue to lapse.
		client := func(store driver.Store) *dsync.Client {
			c, err := dsync.NewClient(store, dsync.ClientWithPollInterval(100*time.Millisecond), dsync.ClientWithBucketSpan(time.Minute), dsync.ClientWithTTL(ttl))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		store := memory.New()
		link := &heldStart{Store: store}
		p := client(link)
		q := client(store)

		link.armed.Store(true)
		mp := newMutex(t, p, "job")
		if mp.TryLock() {
			t.Fatal("P's TryLock held although its start was held back")
		}
		if len(link.held) != 1 {
			t.Fatalf("%d starts held back, want 1", len(link.held))
		}

		time.Sleep(1200 * time.Millisecond)
		mq := newMutex(t, q, "job")
		mq.Lock()
		tokQ := mq.Token()
		mq.Unlock()

		time.Sleep(1500 * time.Millisecond)
		store.Reset() // the operator empties the collections: nothing is held
		link.land(t)

		r := client(store)
		mr := newMutex(t, r, "job")
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		if err := mr.LockContext(ctx); err != nil {
			t.Fatalf("R's Lock: %v", err)
		}
		tokR := mr.Token()
		waited := time.Since(start)
		t.Logf("Q's token %d, R's %d (R waited %v of fake time)", tokQ, tokR, waited)
		if waited > 3*time.Minute {
			t.Errorf("R waited %v, want at most three bucket spans (3m0s)", waited)
		}
		if tokR <= tokQ {
			t.Errorf("R holds with token %d, not above Q's %d, handed out 1.5 s before the emptying", tokR, tokQ)
		}
		mr.Unlock()
	})
}
