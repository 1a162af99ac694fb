package wake

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

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

// A waiter hears of an end that another process's event told this one
// after the waiter's mark (its walk began) and before it registered: it
// goes on at once. An end heard of before the mark, which the walk would
// have read, does not wake it: it waits for its poll interval.
func TestWaiterHearsOfAnEventBeforeItRegistered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = 100 * time.Millisecond
		store := memory.New()
		h := following(t, store, testEnv(store, poll, poll), "me")
		ctx := context.Background()
		blocker := Blocker{Epoch: 5, Session: "s", Expires: store.ServerTime().Latest.Add(time.Hour)}
		ended := driver.Event{Kind: driver.Ended, Key: "k", Epoch: blocker.Epoch, Proc: "another"}

		since := h.Mark()
		h.Event(ended) // between the walk's read and the registration
		start := time.Now()
		heard, err := h.Wait(ctx, "k", 6, blocker, 1, since)
		if err != nil || !heard || time.Since(start) != 0 {
			t.Errorf("wait after the end was heard of, since the mark: heard %v, %v, after %v; want heard at once", heard, err, time.Since(start))
		}

		since = h.Mark() // a walk that began after the end
		start = time.Now()
		heard, err = h.Wait(ctx, "k", 6, blocker, 1, since)
		if err != nil || heard || time.Since(start) < poll {
			t.Errorf("wait after an end heard of before the mark: heard %v, %v, after %v; want to look again at the poll interval %v", heard, err, time.Since(start), poll)
		}
	})
}
