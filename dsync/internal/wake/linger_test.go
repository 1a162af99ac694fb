package wake

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestLingerWatchHearsAWaiterThatCrossesIt: a lingering read claim's
// watch, made while a waiter comes (another process's announcement, a
// waiter of this process, or the stream going down for good), is either
// refused (WatchLinger reports false, and fire is never called) or fired
// once: it never stays on with the waiter unheard, however the two
// cross. The watches, the announcements and this process's waiters are
// each under a lock of their own (doc.go, "A linger hears every
// waiter").
func TestLingerWatchHearsAWaiterThatCrossesIt(t *testing.T) {
	store := memory.New()
	hears := map[string]func(h *Hub){
		"Announcement": func(h *Hub) {
			until := store.ServerTime().Latest.Add(time.Hour)
			h.Event(driver.Event{Kind: driver.Waiting, Key: "k", Epoch: 2, Until: until, Proc: "other"})
		},
		"LocalWaiter": func(h *Hub) {
			_, leave := h.waiters.enter(ClaimID{"k", 2}, h.Mark())
			h.heardLocal("k", 2, 0) // as Wait does, once registered
			t.Cleanup(leave)
		},
		"StreamOff": func(h *Hub) { h.Down(errors.New("gone"), true) },
	}
	for name, hear := range hears {
		t.Run(name, func(t *testing.T) {
			var refused, fired int
			for range 2000 {
				h := New(testEnv(store, defaultPoll, defaultSafetyPoll), &publishes{}, "me")
				h.Live(1)
				var calls atomic.Int32
				var watched bool
				var wg sync.WaitGroup
				start := make(chan struct{})
				wg.Go(func() {
					<-start
					watched = h.WatchLinger(ClaimID{"k", 1}, func() { calls.Add(1) })
				})
				wg.Go(func() {
					<-start
					hear(h)
				})
				close(start)
				wg.Wait()
				switch n := calls.Load(); {
				case watched && n == 1:
					fired++
				case !watched && n == 0:
					refused++
				default:
					t.Fatalf("WatchLinger reported %v, and fire was called %d times: a waiter came, so want false and none, or true and once", watched, n)
				}
			}
			t.Logf("%d watches refused, %d fired", refused, fired)
		})
	}
}
