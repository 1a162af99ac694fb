package dsync

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestSemaphoreWaiterTellsWhenItNeedsOneEnd: a full Semaphore's waiter
// tells, in its announcements, how many ends it needs (driver.Event.Need),
// and tells again, with a need of 1, once an end it heard of leaves it
// one short: its claims' owners then send it their ends at once, not
// later as to the waiters that only count them (dsync/hint's endDefer).
// Limit 2, held by a and b, c waiting (one end lets it hold) and d
// behind c (it passed a, b and c: two of their ends must come). Once a
// releases, c holds, and d needs one of b's and c's ends.
func TestSemaphoreWaiterTellsWhenItNeedsOneEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			waiting []driver.Event
		)
		net := &hintNet{targeted: true, alter: func(e *driver.Event) {
			if e.Kind == driver.Waiting {
				mu.Lock()
				waiting = append(waiting, *e)
				mu.Unlock()
			}
		}}
		told := func(own, epoch uint64) []uint64 {
			mu.Lock()
			defer mu.Unlock()
			var needs []uint64
			for _, e := range waiting {
				if e.Own == own && e.Epoch == epoch {
					needs = append(needs, e.Need)
				}
			}
			return needs
		}
		mem := memory.New()
		sem := func() *Semaphore {
			c := NewMemClientOn(mem, net.member(), ClientWithPollInterval(time.Minute))
			t.Cleanup(func() { _ = c.Close() })
			s, err := NewSemaphore(c.Client, "s", 2)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		ctx := context.Background()
		a, b, c, d := sem(), sem(), sem(), sem()
		for _, s := range []*Semaphore{a, b} {
			if err := s.Acquire(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		ta, tb := a.Token(), b.Token()
		held := make(chan *Semaphore, 2)
		for _, s := range []*Semaphore{c, d} {
			go func() {
				if err := s.Acquire(ctx, 1); err != nil {
					t.Error(err)
				}
				held <- s
			}()
			time.Sleep(time.Second)
			synctest.Wait()
		}
		// Their own claims' epochs, as their announcements tell them.
		owns := map[uint64]bool{}
		mu.Lock()
		for _, e := range waiting {
			owns[e.Own] = true
		}
		mu.Unlock()
		var own []uint64
		for o := range owns {
			own = append(own, o)
		}
		slices.Sort(own)
		if len(own) != 2 {
			t.Fatalf("announcements by %d claims, want 2 (c's and d's): %v", len(own), own)
		}
		tc, td := own[0], own[1]
		for _, e := range []uint64{ta, tb} {
			if got := told(tc, e); !slices.Equal(got, []uint64{1}) {
				t.Errorf("c's announcements for claim %d told needs %v, want [1]", e, got)
			}
		}
		for _, e := range []uint64{ta, tb, tc} {
			if got := told(td, e); !slices.Equal(got, []uint64{2}) {
				t.Errorf("d's announcements for claim %d told needs %v, want [2]", e, got)
			}
		}
		if err := a.ReleaseContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if s := <-held; s != c {
			t.Fatal("d held before c")
		}
		synctest.Wait()
		for _, e := range []uint64{tb, tc} {
			if got := told(td, e); !slices.Equal(got, []uint64{2, 1}) {
				t.Errorf("after a's release, d's announcements for claim %d told needs %v, want [2 1]: told again once it needs one end", e, got)
			}
		}
		if got := told(td, ta); !slices.Equal(got, []uint64{2}) {
			t.Errorf("after a's release, d's announcements for a's claim, which ended, told needs %v, want [2]", got)
		}
		if err := b.ReleaseContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if s := <-held; s != d {
			t.Fatal("the last to hold is not d")
		}
		for _, s := range []*Semaphore{c, d} {
			if err := s.ReleaseContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
	})
}
