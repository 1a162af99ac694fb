package dsync

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// followingClient returns a Client on store that follows its feed.
func followingClient(t *testing.T, store *memory.Store, opts ...ClientOption) *Client {
	t.Helper()
	c, err := NewClient(store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.wake.start()
	return c
}

// TestAnnouncementAfterTheEndIsAnswered: a waiter whose announcement
// reaches the owner only after the owner ended the claim is still woken by
// an Ended event, so it need not look again before the safety poll.
func TestAnnouncementAfterTheEndIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		owner := followingClient(t, store, ClientWithSafetyPoll(time.Hour))
		waiter := followingClient(t, store, ClientWithSafetyPoll(time.Hour))
		m, err := NewMutex(owner, "k")
		if err != nil {
			t.Fatal(err)
		}
		m.Lock()
		tok := m.Token()
		m.Unlock()
		// Too late: the claim has ended, and nobody had announced itself.
		k := waitKey{"k", tok}
		woken := make(chan struct{}, 1)
		waiter.wake.mu.Lock()
		waiter.wake.local[k] = map[chan struct{}]struct{}{woken: {}}
		waiter.wake.mu.Unlock()
		if _, err := waiter.wake.announce(context.Background(), k, 0, 1); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-woken:
		default:
			t.Fatal("no Ended event answered the late announcement")
		}
	})
}

// TestAnnouncingAgainKeepsTheAge: an announcement made again while the
// last one holds keeps the age of the first, so the looks at doubling
// intervals that follow a first announcement (against an end that comes
// soon and an event that is lost) are not made again each time; one made
// after the last lapsed starts afresh.
func TestAnnouncingAgainKeepsTheAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const safety = 100 * time.Millisecond
		c := followingClient(t, memory.New(), ClientWithSafetyPoll(safety))
		hold := c.wake.holdFor() // how long announcements hold
		ctx := context.Background()
		k := waitKey{"k", 1}
		if age, err := c.wake.announce(ctx, k, 0, 1); err != nil || age != 0 {
			t.Fatalf("first announce = %v, %v; want a new announcement", age, err)
		}
		announced := func() announcement {
			c.wake.mu.Lock()
			defer c.wake.mu.Unlock()
			return c.wake.announced[k]
		}
		first := announced()
		// Past the point where less than a safety poll interval is left.
		time.Sleep(hold - safety/2)
		age, err := c.wake.announce(ctx, k, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		again := announced()
		if !again.until.After(first.until) {
			t.Fatalf("announcement not made again: until %v, was %v", again.until, first.until)
		}
		if want := hold - safety/2; age != want {
			t.Errorf("age after announcing again = %v, want %v (the first announcement's)", age, want)
		}
		// Let it lapse: the next announcement is a first one again.
		time.Sleep(hold + time.Millisecond)
		if age, err := c.wake.announce(ctx, k, 0, 1); err != nil || age != 0 {
			t.Errorf("announce after the last lapsed = %v, %v; want a new announcement (age 0)", age, err)
		}
	})
}

// TestJitterUpStaysClose: a waiter that waits for a session to expire
// wakes just after it, not a fifth of the wait later (which made failover
// take 1.08 TTL).
func TestJitterUpStaysClose(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 250 * time.Millisecond, 5 * time.Second, time.Minute} {
		for range 100 {
			if j := jitterUp(d); j < d || j > d+10*time.Millisecond {
				t.Fatalf("jitterUp(%v) = %v, want within [d, d+10ms]", d, j)
			}
		}
	}
}

// TestNextInLineLooksAtMostEverySecond: a waiter next in line looks again
// when another event about its key passes (the end it waits for may have
// been lost), but once per nextLookEvery at most: the end of a withdrawn
// claim makes waiters seem next in line that are not, and in a storm of
// withdrawals each such waiter read the queue at every event about the
// key.
func TestNextInLineLooksAtMostEverySecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := followingClient(t, memory.New(), ClientWithSafetyPoll(time.Hour))
		w := c.wake
		woken := make(chan struct{}, 1)
		w.mu.Lock()
		w.local[waitKey{"k", 6}] = map[chan struct{}]struct{}{woken: {}}
		w.mu.Unlock()
		// The claim before 6 ended: who waits for 6 is next in line.
		w.Event(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 5, Proc: "other"})
		looks := 0
		for i := range 20 {
			until := w.env.now().Earliest.Add(time.Hour)
			w.Event(driver.Event{Kind: driver.Waiting, Key: "k", Epoch: uint64(10 + i), Until: until, Proc: "other"})
			select {
			case <-woken:
				looks++
			default:
			}
			time.Sleep(nextLookEvery / 10)
		}
		// Events for two intervals: a look at the first, and one an
		// interval later.
		if looks != 2 {
			t.Errorf("the waiter next in line looked %d times at 20 events over %v, want 2", looks, 2*nextLookEvery)
		}
	})
}
