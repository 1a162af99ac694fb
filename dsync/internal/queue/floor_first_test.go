package queue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// readsOf is a memory store that counts the reads of one document by ID,
// and fails the next ordered insert once told to (an insert of unknown
// outcome: it never lands, and its sender cannot know).
type readsOf struct {
	*memory.Store
	mu       sync.Mutex
	id       string
	reads    int
	failNext bool
}

func (s *readsOf) Get(ctx context.Context, id string) (queue.Doc, bool, error) {
	s.mu.Lock()
	if id == s.id {
		s.reads++
	}
	s.mu.Unlock()
	return s.Store.Get(ctx, id)
}

func (s *readsOf) InsertOrdered(ctx context.Context, docs []queue.Doc) (int, error) {
	s.mu.Lock()
	fail := s.failNext
	s.failNext = false
	s.mu.Unlock()
	if fail {
		return -1, errors.New("connection reset")
	}
	return s.Store.InsertOrdered(ctx, docs)
}

func (s *readsOf) count(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id, s.reads = id, 0
}

func (s *readsOf) counted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// TestFloorAtFirstEpochGoneAfterAnEmptying: X starts k's segment S and
// holds its first epoch, so its refresh records a floor at S's first
// epoch; it releases, and its next claim's insert has no reply (X
// forgets k's newest epoch). The store is emptied, and Y starts k in a
// segment of the new history and holds. X claims k again on what it
// knows: S, covered for a while yet, with that floor. The floor's claim
// is gone, so the floor does not count: X must find S over at once, and
// queue in Y's segment.
//
// Before the fix the floor at S's first epoch was taken for "no claim
// yet": each of the Claim's 32 rounds read that epoch, found nothing, and
// could not insert at or below the floor; the Claim returned busy, and
// the next did the same, until S's coverage ran out (the public-API
// simulation's outage seed 2045: 1,795 reads of the epoch in 2.2 s, and a
// waiter kept from the key all that time).
func TestFloorAtFirstEpochGoneAfterAnEmptying(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		b0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := &testClock{base: b0}
		clock.set(b0.Add(10 * time.Second))
		store := &readsOf{Store: memory.New()}
		engine := func() (*queue.Engine, string) {
			t.Helper()
			return agreedEngine(ctx, t, store, clock, time.Minute)
		}
		hold := func(e *queue.Engine, sess, owner string) *queue.Claim {
			t.Helper()
			c, err := e.Claim(ctx, "k", owner, sess, queue.ExclusiveTerms, false)
			if err != nil {
				t.Fatalf("%s's claim: %v", owner, err)
			}
			if head, _, err := e.Walk(ctx, c); err != nil || !head {
				t.Fatalf("%s's walk of epoch %d = %v, %v; want it holding", owner, c.Epoch, head, err)
			}
			return c
		}

		x, sx := engine()
		cx := hold(x, sx, "x") // S's first epoch: X vouches for it as a floor
		if cx.Epoch != cx.Seg {
			t.Fatalf("X holds epoch %d of segment %d; want its first", cx.Epoch, cx.Seg)
		}
		clock.set(clock.ServerNow().Latest.Add(time.Minute))
		if lapsed, err := x.Refresh(ctx, []string{"k"}); err != nil || len(lapsed) > 0 {
			t.Fatalf("X's refresh = %v, %v", lapsed, err)
		}
		if err := x.End(ctx, cx, true); err != nil {
			t.Fatal(err)
		}
		store.mu.Lock()
		store.failNext = true
		store.mu.Unlock()
		if _, err := x.Claim(ctx, "k", "x", sx, queue.ExclusiveTerms, false); err == nil {
			t.Fatal("X's claim landed; want its insert failed")
		}

		store.Reset()
		y, sy := engine()
		cy := hold(y, sy, "y")
		if cy.Seg == cx.Seg {
			t.Fatalf("Y started segment %d, X's: the test wants another", cy.Seg)
		}
		if !clock.ServerNow().Latest.Before(x.CoverEnd("k")) {
			t.Fatal("X's coverage of S is over: the test wants X to rely on it")
		}

		sx2, _, err := x.OpenSession(ctx, 30*time.Second) // sx went with the emptying
		if err != nil {
			t.Fatal(err)
		}
		store.count(queue.ClaimID("k", cx.Seg))
		c, err := x.Claim(ctx, "k", "x", sx2, queue.ExclusiveTerms, false)
		if reads := store.counted(); reads > 1 {
			t.Errorf("X's claim read S's first epoch %d times; want it once", reads)
		}
		if err != nil {
			t.Fatalf("X's claim: %v; want it queued in Y's segment", err)
		}
		if c.Seg != cy.Seg || c.Epoch <= cy.Epoch {
			t.Fatalf("X's claim is epoch %d of segment %d; want it above Y's, epoch %d of segment %d", c.Epoch, c.Seg, cy.Epoch, cy.Seg)
		}
		if head, b, err := x.Walk(ctx, c); err != nil || head || b.Epoch != cy.Epoch {
			t.Fatalf("X's walk = %v, %+v, %v; want it waiting for Y's epoch %d", head, b, err, cy.Epoch)
		}
	})
}
