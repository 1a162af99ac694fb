package dsync

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// eventLog records the events a feed delivers to a follower that is no
// Client.
type eventLog struct {
	mu     sync.Mutex
	events []driver.Event
}

func (l *eventLog) Live(uint64)      {}
func (l *eventLog) Down(error, bool) {}
func (l *eventLog) Event(e driver.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []driver.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]driver.Event(nil), l.events...)
}

// followingClient returns a Client on store that follows its feed.
func followingClient(t *testing.T, store *memory.Store, opts ...ClientOption) *Client {
	t.Helper()
	c, err := NewClient(store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.wake.Start()
	return c
}

// TestWithdrawnWaiterEndsItsWait: a waiter that announced it waits and
// then gives its claim up (its LockContext ended) publishes the end of
// its own claim, which its announcement named: the other processes'
// followers stop counting its wait though the claim it waited for goes
// on (issue 45). A waiter that comes to hold publishes no end of its own
// claim when it releases it: a handoff costs no event more.
func TestWithdrawnWaiterEndsItsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		var log eventLog
		defer store.Roles().Feed.Follow(&log)()
		owner := followingClient(t, store, ClientWithSafetyPoll(time.Hour))
		waiter := followingClient(t, store, ClientWithSafetyPoll(time.Hour))
		held, err := NewMutex(owner, "k")
		if err != nil {
			t.Fatal(err)
		}
		held.Lock()
		m, err := NewMutex(waiter, "k")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.LockContext(ctx) }()
		synctest.Wait()
		var own uint64
		for _, e := range log.all() {
			if e.Kind == driver.Waiting && e.Proc == waiter.wake.Proc() {
				own = e.Own
			}
		}
		if own <= held.Token() {
			t.Fatalf("the waiter's announcement names its own claim as of epoch %d; want one above the holder's %d", own, held.Token())
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("LockContext returned %v, want context.Canceled", err)
		}
		synctest.Wait()
		ends := func(epoch uint64) (n int) {
			for _, e := range log.all() {
				if e.Kind == driver.Ended && e.Proc == waiter.wake.Proc() && e.Key == "k" && e.Epoch == epoch {
					n++
				}
			}
			return n
		}
		if n := ends(own); n != 1 {
			t.Errorf("the waiter published %d ends of its withdrawn claim; want 1", n)
		}

		// A handoff: the waiter comes to hold, then releases.
		got := make(chan struct{})
		go func() { m.Lock(); close(got) }()
		synctest.Wait()
		held.Unlock()
		<-got
		tok := m.Token()
		m.Unlock()
		synctest.Wait()
		if n := ends(tok); n != 0 {
			t.Errorf("the waiter published %d ends of the claim it came to hold and released; want none", n)
		}
	})
}
