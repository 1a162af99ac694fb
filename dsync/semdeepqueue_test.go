package dsync

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestDeepSemaphoreQueueReads: 32 processes wait behind a full
// Semaphore of 2, each queued once the one before it waits, and the
// units then pass down the queue one release at a time. A waiter's walk
// goes past the claims that fill its limit only while the end of a
// single one of them could still give it room (limit + 1 claims here),
// so the last waiter's first walk and each handoff read about what they
// read when every walk stopped at the limit (18 and 8.8 documents; 18 and
// 7.5 then). A waiter that
// walked on down the whole queue read 36 on its first walk, and the
// handoffs 20.6 each: every end went to every waiter behind, which read
// the marker again.
func TestDeepSemaphoreQueueReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, waiting = 2, 32
		mem := memory.New()
		var stores []*countedReads
		sem := func() *Semaphore {
			s := &countedReads{}
			stores = append(stores, s)
			c := NewMemClientOn(mem, ClientWithPollInterval(time.Minute),
				func(c *clientConfig) error {
					c.test.wrapStore = func(inner driver.Store) driver.Store { s.Store = inner; return s }
					return nil
				})
			t.Cleanup(func() { _ = c.Close() })
			sm, err := NewSemaphore(c.Client, "s", limit)
			if err != nil {
				t.Fatal(err)
			}
			return sm
		}
		// settle lets the bubble's clock run past what a waiter does
		// after its walk (its announce, the events it follows), then
		// waits for every process to block.
		settle := func() {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		ctx := context.Background()
		queue := make([]*Semaphore, 0, limit+waiting)
		for range limit {
			queue = append(queue, sem())
			if err := queue[len(queue)-1].Acquire(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		waiters := make([]*Semaphore, waiting)
		held := make(chan int, waiting)
		var first int
		for i := range waiters {
			waiters[i] = sem()
			stores[len(stores)-1].take()
			go func() {
				if err := waiters[i].Acquire(ctx, 1); err != nil {
					t.Error(err)
				}
				held <- i
			}()
			settle()
			first = stores[len(stores)-1].take()
		}
		total := 0
		for i := range waiting {
			for _, s := range stores {
				s.take()
			}
			if err := queue[i].ReleaseContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
			queue = append(queue, waiters[<-held])
			settle()
			for _, s := range stores {
				total += s.take()
			}
		}
		perHandoff := float64(total) / waiting
		t.Logf("the last waiter's first walk read %d documents; a handoff, %.1f (all processes)", first, perHandoff)
		if first > 22 {
			t.Errorf("the last of %d waiters read %d documents on its first walk, want at most 22", waiting, first)
		}
		if perHandoff > 10 {
			t.Errorf("a handoff with up to %d waiting read %.1f documents on average, want at most 10", waiting, perHandoff)
		}
		for _, h := range queue[waiting:] {
			_ = h.ReleaseContext(ctx, 1)
		}
	})
}
