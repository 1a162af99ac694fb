package dsync_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// A release wakes the next holder once its end marker is confirmed, and
// prunes the key's history only after: on the handoff's path, from the
// releaser's Unlock to the waiter's first read, the releaser completes
// one request, the marker's insert. A prune (a read of a gate, reads of
// the claims below its floor, a delete) used to come first, once per
// bucket span and key: up to 169 ms of a handoff on the embedded
// FerretDB (issue 44). The wake goes through the store's feed here
// (direct hints take real sockets, which a synctest bubble does not
// have); hints are sent from the same call (dsync/internal/wake: Hub.Ended).

// orderLog keeps, in the order they happened, the requests the processes
// completed and the reads they started.
type orderLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *orderLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, s)
}

func (l *orderLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries
	l.entries = nil
	return e
}

// orderStore is one process's store: each request takes a millisecond,
// and is logged as completed ("A done Get gate"); reads are logged as
// started too ("B reads").
type orderStore struct {
	*memory.Store
	who string
	log *orderLog
}

func newOrderStore(mem *memory.Store, who string, log *orderLog) *orderStore {
	s := &orderStore{who: who, log: log}
	s.Store = mem.Intercept(s.order)
	return s
}

func (s *orderStore) order(_ context.Context, c memory.Call, serve func() error) error {
	what := c.Op
	switch c.Op {
	case "Insert":
		what += " " + idKind(c.Docs[0].ID)
	case "Get":
		what += " " + idKind(c.IDs[0])
	case "InsertOrdered", "InsertEach", "GetRun", "Delete":
	default:
		return nil
	}
	if c.Op == "Get" || c.Op == "GetRun" {
		s.log.add(s.who + " reads")
	}
	err := serve()
	time.Sleep(time.Millisecond)
	s.log.add(s.who + " done " + what)
	return err
}

func TestReleaseWakesBeforeItPrunes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		log := &orderLog{}
		a := newClient(t, newOrderStore(mem, "A", log))
		b := newClient(t, newOrderStore(mem, "B", log))
		ma, _ := dsync.NewMutex(a, "k")
		mb, _ := dsync.NewMutex(b, "k")
		ctx := context.Background()
		// History for a floor: holds of each process with every lower
		// claim ended.
		for range 3 {
			for _, m := range []*dsync.Mutex{ma, mb} {
				if err := m.LockContext(ctx); err != nil {
					t.Fatal(err)
				}
				if err := m.UnlockContext(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Into the next bucket of store time (5 minutes), past the prune
		// delay (6 s): A's next release prunes. It reads the gate of the
		// bucket before (here without a floor to prune below; with one,
		// it would read the claims below it and delete them).
		time.Sleep(5*time.Minute + 10*time.Second)
		handOver(t, ma, mb, func() { log.take() })
		time.Sleep(time.Second) // A's prune done
		synctest.Wait()
		got := log.take()
		woken := slices.Index(got, "B reads")
		if woken < 0 {
			t.Fatalf("B read nothing after the release: %v", got)
		}
		var before []string
		for _, e := range got[:woken] {
			if strings.HasPrefix(e, "A done") {
				before = append(before, e)
			}
		}
		if want := []string{"A done Insert marker"}; !slices.Equal(before, want) {
			t.Errorf("A completed %v before B was woken, want %v only", before, want)
		}
		// The prune still ran, after: else this test shows nothing.
		if !slices.Contains(got[woken:], "A done Get gate") {
			t.Errorf("A's release did not prune (no gate read after the wake): %v", got)
		}
		mb.Unlock()
	})
}

// handOver, in a synctest bubble: a holds, b queues behind it and waits
// two seconds (its first looks done), queued runs (a test clears what it
// logged so far), then a unlocks and b's Lock returns, holding.
func handOver(t *testing.T, a, b *dsync.Mutex, queued func()) {
	t.Helper()
	ctx := context.Background()
	if err := a.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { held <- b.LockContext(ctx) }()
	time.Sleep(2 * time.Second)
	synctest.Wait()
	queued()
	if err := a.UnlockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
