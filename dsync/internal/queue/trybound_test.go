package queue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// stallingStore is a memory store that stops answering once a claim's
// insert has landed (when armed): every later request of a claim, a
// marker or a session waits until its context ends, or until the test
// lets it go.
type stallingStore struct {
	*memory.Store
	armed, stalled atomic.Bool
	release        chan struct{}
}

func newStallingStore() *stallingStore {
	s := &stallingStore{release: make(chan struct{})}
	s.Store = memory.New().Intercept(func(ctx context.Context, c memory.Call, _ func() error) error {
		switch c.Op {
		case "InsertOrdered", "Insert", "Get", "GetRun", "GetSession":
			return s.wait(ctx)
		}
		return nil
	})
	return s
}

func (s *stallingStore) wait(ctx context.Context) error {
	if !s.stalled.Load() {
		return nil
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-s.release:
		return errors.New("released by the test")
	}
}

func (s *stallingStore) InsertOrdered(ctx context.Context, docs []queue.Doc) (int, error) {
	dup, err := s.Store.InsertOrdered(ctx, docs)
	if s.armed.Load() && err == nil && dup < 0 && docs[0].Kind == queue.KindClaim {
		s.stalled.Store(true)
	}
	return dup, err
}

// A try whose store stops answering after its claim's insert, while it
// reads whether the claim holds, returns when its context ends: the
// withdrawal of its claim is sent within the same context, and left to
// Flush when it cannot be confirmed, instead of waiting for a store that
// does not answer.
func TestTryClaimReturnsWithinItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newStallingStore()
		g := grantRig{t, store.Store}
		// Another process holds the key, and the newest claim, a
		// waiter's, was withdrawn: a try inserts its claim above it and
		// must read further down to learn that it does not hold.
		g.claim("holder", excl)
		ew, waiter := g.claim("waiter", excl)
		if err := ew.End(context.Background(), waiter, false); err != nil {
			t.Fatal(err)
		}
		e, err := queue.New(store, fixedClock{}, queue.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		sess, _, err := e.OpenSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		store.armed.Store(true)
		const bound = 2 * time.Second
		done := make(chan error, 1)
		go func() {
			tctx, cancel := context.WithTimeout(ctx, bound)
			defer cancel()
			_, err := e.TryClaim(tctx, "k", "tryer", sess, excl)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("TryClaim held while another process holds the key")
			}
		case <-time.After(10 * bound):
			t.Errorf("TryClaim did not return %v after its context ended", 9*bound)
		}
		if !store.stalled.Load() {
			t.Fatal("the store never stopped answering: the claim's insert did not land")
		}
		if n := e.Pending(); n != 1 {
			t.Errorf("%d ends pending, want the try's withdrawal", n)
		}
		close(store.release)
		synctest.Wait()
	})
}
