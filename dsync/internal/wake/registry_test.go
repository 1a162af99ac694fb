package wake

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestNextInLineLooksAtMostEverySecond: a waiter next in line looks again
// when another event about its key passes (the end it waits for may have
// been lost), but once per nextLookEvery at most: the end of a withdrawn
// claim makes waiters seem next in line that are not, and in a storm of
// withdrawals each such waiter read the queue at every event about the
// key.
func TestNextInLineLooksAtMostEverySecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		h := following(t, store, testEnv(store, defaultPoll, time.Hour), "me")
		woken, leave := h.waiters.enter(ClaimID{"k", 6}, h.Mark())
		defer leave()
		// The claim before 6 ended: who waits for 6 is next in line.
		h.Event(driver.Event{Kind: driver.Ended, Key: "k", Epoch: 5, Proc: "other"})
		looks := 0
		for i := range 20 {
			until := h.env.Now().Earliest.Add(time.Hour)
			h.Event(driver.Event{Kind: driver.Waiting, Key: "k", Epoch: uint64(10 + i), Until: until, Proc: "other"})
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
