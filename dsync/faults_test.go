package dsync_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// A memory.Process made unreachable behaves as a store that went away:
// the hold ends at its deadline, Unlock reports the loss, Lock keeps
// trying until its context ends; once reachable again, Lock works.
// Nothing is logged to the default logger when the Client has another.
func TestMemoryProcessUnreachable(t *testing.T) {
	var logged logBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	synctest.Test(t, func(t *testing.T) {
		const ttl = time.Second
		b := dsync.NewMemClient(dsync.ClientWithTTL(ttl))
		defer b.Close()
		m, err := dsync.NewMutex(b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := m.LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		b.SetReachable(false)
		select {
		case <-m.Lost():
		case <-time.After(2 * ttl):
			t.Fatal("the hold outlived its TTL with the store unreachable")
		}
		if at := time.Since(start); at > ttl {
			t.Errorf("lost %v after the store went away, TTL %v", at, ttl)
		}
		if err := m.UnlockContext(ctx); !errors.Is(err, dsync.ErrLost) {
			t.Errorf("UnlockContext after the loss = %v, want ErrLost", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 3*ttl)
		err = m.LockContext(wctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("LockContext while unreachable = %v, want the context's deadline", err)
		}
		b.SetReachable(true)
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("LockContext once reachable again: %v", err)
		}
		m.Unlock()
	})
	if out := logged.String(); out != "" {
		t.Errorf("the memory backend logged, with no logger given:\n%s", out)
	}
}

// A unit test of code that must stop when its lock is lost: make the
// process's view of the in-memory store unreachable, and the hold ends at
// its deadline, as it would with a database that went away. (Under
// testing/synctest the wait takes no real time.)
func Example_storeUnreachable() {
	proc := memory.New().Process()
	c, err := dsync.NewClient(proc, dsync.ClientWithTTL(200*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	m, err := dsync.NewMutex(c, "report")
	if err != nil {
		panic(err)
	}
	m.Lock()
	proc.SetReachable(false) // the database goes away
	<-m.Lost()               // the code under test must stop here
	err = m.UnlockContext(context.Background())
	fmt.Println("lost:", errors.Is(err, dsync.ErrLost))
	proc.SetReachable(true)
	// Output: lost: true
}

// Two processes on one memory store, as two replicas on one database: the
// holder is partitioned from the store (SetReachable on its backend only)
// and the other takes over. The partitioned hold's Lost closes at its
// deadline, before the other's hold begins; the other's token is higher;
// the store serves the other process throughout, and the partitioned one
// again once it heals.
func TestPartitionedHolderAndATakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 2 * time.Second
		a, b := twoProcesses(t, dsync.ClientWithTTL(ttl))
		ma, err := dsync.NewMutex(a.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		mb, err := dsync.NewMutex(b.Client, "k")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		ma.Lock()
		a.SetReachable(false)
		if !b.Reachable() {
			t.Fatal("cutting one backend off cut the other off too")
		}
		lost := make(chan time.Time, 1)
		go func() {
			<-ma.Lost()
			lost <- time.Now()
		}()
		if err := mb.LockContext(ctx); err != nil {
			t.Fatalf("the other process's Lock: %v", err)
		}
		heldAt := time.Now()
		synctest.Wait()
		var lostAt time.Time
		select {
		case lostAt = <-lost:
		default:
			t.Fatal("the partitioned hold's Lost is open while another process holds")
		}
		if heldAt.Before(lostAt) {
			t.Errorf("the other process held at %v, before the partitioned hold was lost at %v", heldAt, lostAt)
		}
		if mb.Token() <= ma.Token() {
			t.Errorf("the takeover's token %d is not above the partitioned hold's %d", mb.Token(), ma.Token())
		}
		if err := ma.UnlockContext(ctx); !errors.Is(err, dsync.ErrLost) {
			t.Errorf("the partitioned holder's UnlockContext = %v, want ErrLost", err)
		}
		a.SetReachable(true)
		wctx, cancel := context.WithTimeout(ctx, 10*ttl)
		defer cancel()
		go func() {
			synctest.Wait() // a queued behind b
			mb.Unlock()
		}()
		if err := ma.LockContext(wctx); err != nil {
			t.Fatalf("the healed process's Lock: %v", err)
		}
		if ma.Token() <= mb.Token() {
			t.Errorf("the healed process's token %d is not above the takeover's %d", ma.Token(), mb.Token())
		}
		ma.Unlock()
	})
}

// twoProcesses returns the backends of two processes on one shared memory
// store, each with its own lease and its own switches (SetReachable,
// SetAnswering); both are closed when the test ends.
func twoProcesses(t *testing.T, opts ...dsync.ClientOption) (a, b *dsync.MemClient) {
	store := memory.New()
	a, b = dsync.NewMemClientOn(store, opts...), dsync.NewMemClientOn(store, opts...)
	t.Cleanup(func() {
		b.Close()
		a.Close()
	})
	return a, b
}
