package dsync_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestStoppedHoldersTakenOverAtExpiry: 40 holders, each a process of its
// own, stop at once (they reach the store no more: no renewal, no
// release, no event), each with a waiter in another process; all are
// taken over as their sessions expire in the store's time, not at the
// waiters' safety poll (an hour here). Nobody writes after the stop, so no wake-up comes:
// each waiter must look again at the expiry it read, whatever the number
// of keys that expire with it. The waiters have waited long enough to
// rely on the safety poll alone (past wake.LostWindow since announcing).
func TestStoppedHoldersTakenOverAtExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		ttl := 2 * time.Second
		store := memory.New()
		var holders []*dsync.MemClient
		for i := range n {
			h := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl))
			defer h.Close()
			holders = append(holders, h)
			newMutex(t, h.Client, fmt.Sprint("k", i)).Lock()
			time.Sleep(ttl / n) // renewed at moments spread over a TTL
		}
		took := make(chan time.Time, n)
		var waiters []*dsync.Mutex
		for i := range n {
			w := dsync.NewMemClientOn(store, dsync.ClientWithTTL(ttl), dsync.ClientWithSafetyPoll(time.Hour))
			defer w.Close()
			m := newMutex(t, w.Client, fmt.Sprint("k", i))
			waiters = append(waiters, m)
			go func() {
				m.Lock()
				took <- time.Now()
			}()
		}
		time.Sleep(30 * time.Second) // well past the looks that follow an announcement
		synctest.Wait()
		if len(took) > 0 {
			t.Fatalf("%d waiters took over while the holder ran", len(took))
		}

		stop := time.Now()
		for _, h := range holders {
			h.SetReachable(false)
		}
		var after []time.Duration
		for range n {
			after = append(after, (<-took).Sub(stop))
		}
		slices.Sort(after)
		// The holder's session was renewed at most a TTL before the stop,
		// so it has expired a TTL after it; a waiter then looks at once.
		if bound := ttl + time.Second; after[n-1] > bound {
			t.Errorf("takeovers after the stop: first %v, median %v, last %v; want all within the TTL + 1 s (%v), not at the safety poll",
				after[0], after[n/2], after[n-1], bound)
		}
		for _, m := range waiters {
			m.Unlock()
		}
	})
}
