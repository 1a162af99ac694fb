package dsync

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/internal/chain"
)

// A waiter hears of an end that another process's event told this one
// after the waiter's mark (its walk began) and before it registered: it
// goes on at once. An end heard of before the mark, which the walk would
// have read, does not wake it: it waits for its poll interval.
func TestWaiterHearsOfAnEventBeforeItRegistered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = 100 * time.Millisecond
		c := followingClient(t, memory.New(), ClientWithPollInterval(poll), ClientWithSafetyPoll(poll))
		ctx := context.Background()
		blocker := chain.Blocker{Epoch: 5, Session: "s", ExpiresAt: c.store.ServerTime().Latest.Add(time.Hour)}
		ended := driver.Event{Kind: driver.Ended, Key: "k", Epoch: blocker.Epoch, Proc: "another"}

		since := c.wake.mark()
		c.wake.Event(ended) // between the walk's read and the registration
		start := time.Now()
		heard, err := c.wake.wait(ctx, "k", 6, blocker, 1, since)
		if err != nil || !heard || time.Since(start) != 0 {
			t.Errorf("wait after the end was heard of, since the mark: heard %v, %v, after %v; want heard at once", heard, err, time.Since(start))
		}

		since = c.wake.mark() // a walk that began after the end
		start = time.Now()
		heard, err = c.wake.wait(ctx, "k", 6, blocker, 1, since)
		if err != nil || heard || time.Since(start) < poll {
			t.Errorf("wait after an end heard of before the mark: heard %v, %v, after %v; want to look again at the poll interval %v", heard, err, time.Since(start), poll)
		}
	})
}
