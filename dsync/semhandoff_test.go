package dsync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestFullSemaphoreHandoffReads: a unit of a full Semaphore passes from
// process to process as the bench's handoffs do (a third process keeps
// the other unit of 2 for good; each holder, once it released, waits
// again), on a store that reads by ID only (FerretDB). From the start of
// a release to the next Acquire's return, all the processes together
// read what a Mutex's next holder reads (TestWokenWaiterReads: its
// predecessor's end marker, then its own claim back), now and then a
// little more. Before, the next holder's walk went down to the unit kept
// for good, at its segment's first epoch, and read the gate and the
// protocol document too (4 reads in a row); and every waiter woke on
// each release and re-read the markers of the units it passed, where
// only the next could hold (with 4 waiting, 16 reads per handoff).
func TestFullSemaphoreHandoffReads(t *testing.T) {
	for _, waiting := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d waiting", waiting), func(t *testing.T) {
			perHandoff := semaphoreHandoffReads(t, waiting, 20)
			t.Logf("reads per handoff, all processes: %.2f", perHandoff)
			if perHandoff > 2.5 {
				t.Errorf("a handoff read %.2f documents on average, want at most 2.5 (a Mutex's: 2)", perHandoff)
			}
		})
	}
}

// semaphoreHandoffReads runs handoffs of a full Semaphore's unit, as
// TestFullSemaphoreHandoffReads says, and returns the reads that every
// process sent during them, per handoff, once each process has held.
func semaphoreHandoffReads(t *testing.T, waiting, handoffs int) float64 {
	var perHandoff float64
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		var stores []*costStore
		sem := func() *dsync.Semaphore {
			s := &costStore{Store: mem, n: map[string]int{}, rng: rand.New(rand.NewPCG(3, uint64(len(stores))))}
			stores = append(stores, s)
			// Waiters look when woken, not on polls.
			c := newClient(t, byIDStore{s}, dsync.ClientWithIdleAge(0), dsync.ClientWithPollInterval(time.Minute))
			sm, err := dsync.NewSemaphore(c, "s", 2)
			if err != nil {
				t.Fatal(err)
			}
			return sm
		}
		ctx := context.Background()
		keep := sem()
		if err := keep.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		procs := make([]*dsync.Semaphore, waiting+1)
		for i := range procs {
			procs[i] = sem()
		}
		held := make(chan int, len(procs))
		acquire := func(i int) {
			go func() {
				if err := procs[i].Acquire(ctx, 1); err != nil {
					t.Error(err)
				}
				held <- i
			}()
		}
		acquire(0)
		holder := <-held
		for i := 1; i < len(procs); i++ {
			acquire(i)
			time.Sleep(time.Second) // queued in this order, its first looks done
			synctest.Wait()
		}
		total := 0
		warmUp := 2 * len(procs) // every process has held and waits again
		for h := range warmUp + handoffs {
			for _, s := range stores {
				s.take()
			}
			if err := procs[holder].ReleaseContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
			next := <-held
			if h >= warmUp {
				for _, s := range stores {
					for _, n := range reads(s.take()) {
						total += n
					}
				}
			}
			acquire(holder)
			holder = next
			time.Sleep(500 * time.Millisecond) // a hold
			synctest.Wait()
		}
		perHandoff = float64(total) / float64(handoffs)
		if err := procs[holder].ReleaseContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		for range waiting {
			i := <-held
			if err := procs[i].ReleaseContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
	})
	return perHandoff
}
