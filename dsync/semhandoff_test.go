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
// Over a whole cycle (the handoff, the former holder queueing again,
// the hold), the processes read 39 and 63 documents per cycle before
// (1 and 4 waiting), growing with the key's history since the unit
// kept; 7.0 and 20.3 now.
func TestFullSemaphoreHandoffReads(t *testing.T) {
	for _, waiting := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d waiting", waiting), func(t *testing.T) {
			perHandoff, perCycle := semaphoreHandoffReads(t, waiting, 20)
			t.Logf("reads per handoff, all processes: %.2f; per cycle (the handoff, the former holder queueing again, the hold): %.2f", perHandoff, perCycle)
			if perHandoff > 2.5 {
				t.Errorf("a handoff read %.2f documents on average, want at most 2.5 (a Mutex's: 2)", perHandoff)
			}
			if most := float64(5 + 5*waiting); perCycle > most {
				t.Errorf("a cycle read %.2f documents on average, want at most %.0f", perCycle, most)
			}
		})
	}
}

// semaphoreHandoffReads runs handoffs of a full Semaphore's unit, as
// TestFullSemaphoreHandoffReads says, and returns the reads that every
// process sent during them, per handoff, once each process has held,
// and what they sent in all, per cycle.
func semaphoreHandoffReads(t *testing.T, waiting, handoffs int) (perHandoff, perCycle float64) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		var stores []*costStore
		sem := func() *dsync.Semaphore {
			s := newCostStore(mem, rand.New(rand.NewPCG(3, uint64(len(stores)))), false)
			stores = append(stores, s)
			// Waiters look when woken, not on polls.
			c := newClient(t, s, dsync.ClientWithIdleAge(0), dsync.ClientWithPollInterval(time.Minute))
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
		total, cycles := 0, 0
		warmUp := 2 * len(procs) // every process has held and waits again
		for h := range warmUp + handoffs {
			for _, s := range stores {
				for _, n := range reads(s.take()) {
					if h > warmUp {
						cycles += n
					}
				}
			}
			if err := procs[holder].ReleaseContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
			next := <-held
			if h >= warmUp {
				for _, s := range stores {
					n := 0
					for _, k := range reads(s.take()) {
						n += k
					}
					total += n
					if h > warmUp {
						cycles += n
					}
				}
			}
			acquire(holder)
			holder = next
			time.Sleep(500 * time.Millisecond) // a hold
			synctest.Wait()
		}
		perHandoff = float64(total) / float64(handoffs)
		perCycle = float64(cycles) / float64(handoffs-1) // from the second handoff counted to the last
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
	return perHandoff, perCycle
}
