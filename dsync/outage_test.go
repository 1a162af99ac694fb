package dsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// Holds across an outage of the store (ClientWithOutageGrace), on the
// store in memory: processes cut off all at once (an outage of the
// store) or one alone (a partition), in a synctest bubble.

const (
	outTTL   = 3 * time.Second
	outGrace = 30 * time.Second
)

// outageWorld is processes on one store in memory, each with a grace.
type outageWorld struct {
	store   *memory.Store
	clients []*dsync.MemClient
}

func newOutageWorld(n int, grace time.Duration, opts ...dsync.ClientOption) *outageWorld {
	w := &outageWorld{store: memory.New()}
	for range n {
		o := append([]dsync.ClientOption{dsync.ClientWithTTL(outTTL), dsync.ClientWithOutageGrace(grace)}, opts...)
		w.clients = append(w.clients, dsync.NewMemClientOn(w.store, o...))
	}
	return w
}

// down cuts every process off the store (up: reachable again).
func (w *outageWorld) down(down bool) {
	for _, c := range w.clients {
		c.Proc.SetReachable(!down)
	}
}

// hang makes the store stop answering every process (answer: again),
// which then applies the writes given up on meanwhile, late.
func (w *outageWorld) hang(hang bool) {
	for _, c := range w.clients {
		c.Proc.SetAnswering(!hang)
	}
}

func (w *outageWorld) close() {
	for _, c := range w.clients {
		_ = c.Close()
	}
}

// locker locks m in a goroutine of its own: the channel gets its result.
func locker(ctx context.Context, m *dsync.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.LockContext(ctx) }()
	return done
}

// lockedBy reports whether done has a result yet, and which.
func lockedBy(done <-chan error) (error, bool) {
	select {
	case err := <-done:
		return err, true
	default:
		return nil, false
	}
}

// waitLost waits for m's Lost, at most limit.
func waitLost(t *testing.T, m *dsync.Mutex, limit time.Duration) {
	t.Helper()
	select {
	case <-m.Lost():
	case <-time.After(limit):
		t.Fatalf("Lost still open %v into the outage", limit)
	}
}

// TestGraceZeroRelockWaitsForUnlock: without a grace nothing changes: a
// hold lost in an outage wraps ErrLost only, and LockContext called
// again without Unlock waits for the Unlock, as ever (here until its
// context ends).
func TestGraceZeroRelockWaitsForUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newOutageWorld(1, 0)
		defer w.close()
		a := newMutex(t, w.clients[0].Client, "k")
		a.Lock()
		w.down(true)
		waitLost(t, a, outTTL)
		if err := a.Err(); !errors.Is(err, dsync.ErrLost) || errors.Is(err, dsync.ErrSuspended) {
			t.Fatalf("Err at grace 0 = %v; want ErrLost, not ErrSuspended", err)
		}
		w.down(false)
		ctx, cancel := context.WithTimeout(context.Background(), 3*outTTL)
		defer cancel()
		if err := a.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("LockContext after Lost at grace 0 = %v; want it waiting for the Unlock until ctx ends", err)
		}
		if err := a.UnlockContext(context.Background()); !errors.Is(err, dsync.ErrLost) {
			t.Fatalf("Unlock = %v; want ErrLost", err)
		}
		a.Lock()
		a.Unlock()
	})
}

// TestOutageGraceBounds: the option's bounds.
func TestOutageGraceBounds(t *testing.T) {
	for _, c := range []struct {
		grace time.Duration
		opts  []dsync.ClientOption
		ok    bool
	}{
		{0, nil, true},
		{30 * time.Second, nil, true},
		{-time.Second, nil, false},
		{10*time.Minute + time.Millisecond, []dsync.ClientOption{dsync.ClientWithBucketSpan(time.Hour)}, false},
		{10 * time.Minute, []dsync.ClientOption{dsync.ClientWithBucketSpan(time.Hour)}, true},
		{time.Second + time.Microsecond, nil, false},
		// Span 5 min, TTL 15 s: at most 5 min − 15 s − 2 s.
		{5*time.Minute - 17*time.Second, nil, true},
		{5*time.Minute - 17*time.Second + time.Millisecond, nil, false},
	} {
		opts := append([]dsync.ClientOption{dsync.ClientWithOutageGrace(c.grace)}, c.opts...)
		cl, err := dsync.NewClient(memory.New(), opts...)
		if (err == nil) != c.ok {
			t.Errorf("ClientWithOutageGrace(%v) with %d options: %v; want ok %v", c.grace, len(c.opts), err, c.ok)
		}
		if cl != nil {
			_ = cl.Close()
		}
	}
}
