package dsync

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// countingStore is a process's view of a shared memory store whose
// follower counts the events it delivers to that process.
type countingStore struct {
	*memory.Store
	delivered atomic.Int64
}

func (s *countingStore) Roles() driver.Roles {
	r := s.Store.Roles()
	r.Feed = countingFeed{r.Feed, &s.delivered}
	return r
}

// countingFeed is a feed whose followers count the events they deliver.
type countingFeed struct {
	driver.Feed
	n *atomic.Int64
}

func (f countingFeed) Follow(h driver.FeedHandler) (stop func()) {
	return f.Feed.Follow(countingHandler{FeedHandler: h, n: f.n})
}

type countingHandler struct {
	driver.FeedHandler
	n *atomic.Int64
}

func (h countingHandler) Event(e driver.Event) {
	h.n.Add(1)
	h.FeedHandler.Event(e)
}

// eventsPerWaiter has one process hold a key and w others wait for it,
// and returns how many events each waiting process received, on average,
// while they waited for idle (half an hour of virtual time, after a minute
// to settle), and during that minute.
func eventsPerWaiter(t *testing.T, w int) (idle, settling float64) {
	synctest.Test(t, func(t *testing.T) {
		shared := memory.New()
		client := func() (*Client, *countingStore) {
			s := &countingStore{Store: shared}
			c, err := NewClient(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			c.wake.Start()
			return c, s
		}
		holder, _ := client()
		h, err := NewMutex(holder, "k")
		if err != nil {
			t.Fatal(err)
		}
		h.Lock()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		stores := make([]*countingStore, w)
		for i := range w {
			c, s := client()
			stores[i] = s
			m, err := NewMutex(c, "k")
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = m.LockContext(ctx) })
		}
		delivered := func() int64 {
			var n int64
			for _, s := range stores {
				n += s.delivered.Load()
			}
			return n
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		settled := delivered()
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		idle = float64(delivered()-settled) / float64(w)
		settling = float64(settled) / float64(w)
		cancel()
		wg.Wait()
		h.Unlock()
	})
	return idle, settling
}

// TestEventsPerWaiterDoNotGrowWithWaiters: while processes wait for a
// key that stays held, what each receives from the feed does not grow
// with the number of them. Every follower receives every event, so a
// waiter that announced itself again every few minutes cost each of W
// waiters W events per interval (about 17 × W per waiter in the half
// hour counted here): a term in W² in all.
func TestEventsPerWaiterDoNotGrowWithWaiters(t *testing.T) {
	few, fewSettling := eventsPerWaiter(t, 2)
	many, manySettling := eventsPerWaiter(t, 16)
	t.Logf("events per waiter while waiting 30 min: %.1f with 2 waiters, %.1f with 16 (while settling: %.1f, %.1f)", few, many, fewSettling, manySettling)
	if fewSettling == 0 || manySettling == 0 {
		t.Fatal("no event delivered while the waiters announced themselves: the count is broken")
	}
	if many > few {
		t.Errorf("each of 16 waiters received %.1f events while waiting, each of 2 received %.1f: events per waiter grow with the waiters", many, few)
	}
}
