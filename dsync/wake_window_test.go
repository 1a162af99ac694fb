package dsync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// endAfterRead is a memory store that, once armed and after a claim's
// insert, runs end before it answers the next read of the queue: the
// read found the claim below live, and that claim ends before the
// reader hears of it.
type endAfterRead struct {
	*memory.Store
	armed, claimed atomic.Bool
	end            func()
}

func newEndAfterRead() *endAfterRead {
	s := &endAfterRead{}
	s.Store = memory.New().Intercept(func(_ context.Context, c memory.Call, serve func() error) error {
		if c.Op != "Get" && c.Op != "GetRun" {
			return nil
		}
		err := serve()
		s.afterRead()
		return err
	})
	return s
}

func (s *endAfterRead) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	dup, err := s.Store.InsertOrdered(ctx, docs)
	if s.armed.Load() && err == nil && dup < 0 && docs[0].Kind == driver.KindClaim {
		s.claimed.Store(true)
	}
	return dup, err
}

// afterRead runs end once, on the first read after the armed claim.
func (s *endAfterRead) afterRead() {
	if s.claimed.Load() && s.armed.CompareAndSwap(true, false) {
		done := make(chan struct{})
		go func() { defer close(done); s.end() }()
		<-done
	}
}

// An Acquire queued behind a claim of its own process that ends while
// the Acquire's walk is reading (found live, ended before the waiter
// registered for its end) goes on at once, not after the poll interval:
// a waiter hears of the ends of the claims it waits for made since its
// walk began, even those made before it registered.
func TestWaiterHearsOfAnEndBeforeItRegistered(t *testing.T) {
	for _, withdraw := range []bool{false, true} {
		name := map[bool]string{false: "released", true: "withdrawn"}[withdraw]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newEndAfterRead()
				c, err := dsync.NewClient(s)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				sem, err := dsync.NewSemaphore(c, "k", 2, quiet)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				var ended time.Time
				if !withdraw {
					// Both units are held, and released when the read
					// has found their claim live.
					if err := sem.Acquire(ctx, 2); err != nil {
						t.Fatal(err)
					}
					s.end = func() { sem.Release(2); ended = time.Now() }
				} else {
					// One unit is held; a claim for two waits behind it,
					// and leaves no room for the Acquire below, until it
					// is withdrawn (its context ends) when the read has
					// found it live.
					if err := sem.Acquire(ctx, 1); err != nil {
						t.Fatal(err)
					}
					defer sem.Release(1)
					wctx, cancel := context.WithCancel(ctx)
					waited := make(chan error, 1)
					go func() { waited <- sem.Acquire(wctx, 2) }()
					synctest.Wait()
					s.end = func() { cancel(); <-waited; ended = time.Now() }
				}
				s.armed.Store(true)
				if err := sem.Acquire(ctx, 1); err != nil {
					t.Fatal(err)
				}
				defer sem.Release(1)
				if ended.IsZero() {
					t.Fatal("the claim below did not end during the Acquire's read")
				}
				if late := time.Since(ended); late > 0 {
					t.Errorf("Acquire held %v after the claim it waited for was %s; want at once (poll interval %v)",
						late, name, dsync.DefaultPollInterval)
				}
			})
		})
	}
}
