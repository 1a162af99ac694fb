package wake

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// followed is a feed that counts its follows and their stops, and keeps
// what it is given to publish.
type followed struct {
	publishes
	fmu            sync.Mutex
	follows, stops int
}

func (f *followed) Follow(driver.FeedHandler) func() {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	f.follows++
	return func() { f.fmu.Lock(); f.stops++; f.fmu.Unlock() }
}

func (f *followed) counts() (follows, stops int) {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	return f.follows, f.stops
}

// settling is a Hub whose Env.Settle settles feed with direct hints,
// counting its calls; block, if set, makes Settle wait for its context
// to end first.
type settling struct {
	h     *Hub
	feed  *followed
	mu    sync.Mutex
	calls int
	ended bool // Settle's context had ended when it returned
}

func newSettling(t *testing.T, block bool) *settling {
	t.Helper()
	s := &settling{feed: &followed{}}
	env := testEnv(memory.New(), defaultPoll, defaultSafetyPoll)
	env.Settle = func(ctx context.Context) Settled {
		s.mu.Lock()
		s.calls++
		s.mu.Unlock()
		if block {
			<-ctx.Done()
		}
		s.mu.Lock()
		s.ended = ctx.Err() != nil
		s.mu.Unlock()
		return Settled{Feed: s.feed, Direct: true}
	}
	s.h = New(env, nil, "p")
	return s
}

func (s *settling) settled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestSettlingWaitsForTheFirstEnd: a Hub whose feed is settled in the
// background (Env.Settle) settles nothing as its first session opens
// (Start) nor as its first claim is made, so the first Lock's path sends
// nothing for it; it settles once, as that claim ends, then follows the
// feed settled, with direct hints. Until then it publishes nothing.
func TestSettlingWaitsForTheFirstEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSettling(t, false)
		defer s.h.Close()
		s.h.Start()
		s.h.Claimed("k", 1, "sess")
		synctest.Wait()
		if n := s.settled(); n != 0 {
			t.Fatalf("settled %d times before the first claim ended", n)
		}
		if s.h.direct() || s.h.feed() != nil || s.h.feedless() {
			t.Fatal("the Hub reports a feed before it settled one")
		}
		s.h.Ended(context.Background(), "k", 1)
		synctest.Wait()
		if n := s.settled(); n != 1 {
			t.Fatalf("settled %d times after the first claim ended, want 1", n)
		}
		if f, _ := s.feed.counts(); f != 1 || !s.h.direct() {
			t.Fatalf("after settling: followed %d times, direct %v; want once, with hints", f, s.h.direct())
		}
		s.h.Start() // a later session
		s.h.Claimed("k", 2, "sess")
		s.h.Ended(context.Background(), "k", 2)
		synctest.Wait()
		if f, _ := s.feed.counts(); s.settled() != 1 || f != 1 {
			t.Errorf("settled %d times, followed %d times; want once each", s.settled(), f)
		}
		if n := s.feed.count(); n != 0 {
			t.Errorf("published %d events: nobody announced a wait", n)
		}
	})
}

// TestSettlingForAWaiter: a waiter that starts to wait settles the feed
// at once, and looks again once it is settled (it may announce itself
// now); a Hub whose first claim holds on settles settleAfter after
// Start.
func TestSettlingForAWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSettling(t, false)
		defer s.h.Close()
		s.h.Start()
		heard := make(chan bool, 1)
		go func() {
			ok, _ := s.h.Wait(context.Background(), "k", 0, Blocker{Epoch: 1, Session: "other", Expires: time.Now().Add(time.Hour)}, 1, s.h.Mark())
			heard <- ok
		}()
		synctest.Wait()
		if n := s.settled(); n != 1 {
			t.Fatalf("settled %d times as a waiter waits, want 1", n)
		}
		select {
		case ok := <-heard:
			if !ok {
				t.Error("the waiter's wait ran out; want it woken as the feed settled")
			}
		default:
			t.Error("the waiter still waits once the feed settled; want it to look again")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := newSettling(t, false)
		defer s.h.Close()
		s.h.Start()
		s.h.Claimed("k", 1, "sess")
		time.Sleep(settleAfter - time.Millisecond)
		synctest.Wait()
		if n := s.settled(); n != 0 {
			t.Fatalf("settled %d times before settleAfter", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := s.settled(); n != 1 {
			t.Fatalf("settled %d times at settleAfter with a claim held, want 1", n)
		}
	})
}

// TestCloseStopsSettling: Close ends a settling under way (its context
// ends) and waits for it, and what it settled is not followed; a Hub
// closed before it settles never does.
func TestCloseStopsSettling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSettling(t, true)
		s.h.Start()
		s.h.Ended(context.Background(), "k", 1)
		synctest.Wait()
		if n := s.settled(); n != 1 {
			t.Fatalf("settled %d times after the first claim ended, want 1", n)
		}
		s.h.Close()
		s.mu.Lock()
		ended := s.ended
		s.mu.Unlock()
		if !ended {
			t.Error("Close returned before the settling's context ended")
		}
		if f, _ := s.feed.counts(); f != 0 {
			t.Errorf("the feed settled as the Hub closed was followed %d times", f)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := newSettling(t, false)
		s.h.Start()
		s.h.Close()
		s.h.Ended(context.Background(), "k", 1)
		time.Sleep(2 * settleAfter)
		synctest.Wait()
		if n := s.settled(); n != 0 {
			t.Errorf("a closed Hub settled %d times", n)
		}
	})
}
