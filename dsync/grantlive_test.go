package dsync_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// What one process's RLock+RUnlock (or Acquire(1)+Release(1)) costs while
// other processes hold the key's read side (or units) all along, as in
// the bench's rwmutex and semaphore rows with live readers and units
// (issue 44): two requests, the claim and its release, whatever the live
// claims below and whether the store reads runs or not. The claim right
// above the process's own release holds on its insert (dsync/internal/queue,
// tip.go). Before that (this test at d498ac1), without runs: RWMutex 5.00
// requests at 4, 16 and 64 live readers; Semaphore (limit 64) 34, 58 and
// 154 at 4, 16 and 64 live units, growing with the cycles (each walk read
// every claim since the oldest live one, two requests each); with runs,
// RWMutex 3.00, Semaphore 6.00 to 7.00 (a run, the segment's gate and
// the protocol document, the walker's own claim).

func TestGrantCostLiveHolders(t *testing.T) {
	const limit = 64
	for _, runs := range []bool{false, true} {
		for _, sem := range []bool{false, true} {
			for _, live := range liveCounts {
				per, by := liveCost(t, live, runs, func(c *dsync.Client) cycler {
					if sem {
						s, err := dsync.NewSemaphore(c, "k", limit, quiet)
						if err != nil {
							t.Fatal(err)
						}
						return cycler{
							take: func(ctx context.Context) error { return s.Acquire(ctx, 1) },
							give: func(ctx context.Context) error { return s.ReleaseContext(ctx, 1) },
						}
					}
					rw, err := dsync.NewRWMutex(c, "k", quiet)
					if err != nil {
						t.Fatal(err)
					}
					return cycler{take: rw.RLockContext, give: rw.RUnlockContext}
				})
				what := "RWMutex RLock+RUnlock"
				if sem {
					what = "Semaphore Acquire(1)+Release(1)"
				}
				t.Logf("%s, %2d live, runs %v: %.2f requests:%s", what, live, runs, per, formatBy(by))
				if per > 2.001 {
					t.Errorf("%s with %d live, runs %v: %.2f requests per cycle, want 2", what, live, runs, per)
				}
			}
		}
	}
}

// liveCost has live−1 processes take the key once and hold it, then one
// more cycle it (made by mk) 20 times after a warm-up, and returns that
// process's requests per cycle, in all and by method.
func liveCost(t *testing.T, live int, runs bool, mk func(*dsync.Client) cycler) (per float64, by map[string]float64) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		ctx := context.Background()
		client := func(i int) (*costStore, cycler) {
			cs := newCostStore(mem, rand.New(rand.NewPCG(uint64(live), uint64(i))), runs)
			return cs, mk(newClient(t, cs))
		}
		for i := 1; i < live; i++ {
			_, holder := client(i)
			if err := holder.take(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cs, cy := client(0)
		const warm, cycles = 2, 20
		for i := range warm + cycles {
			if i == warm {
				cs.take()
			}
			if err := cy.take(ctx); err != nil {
				t.Fatal(err)
			}
			if err := cy.give(ctx); err != nil {
				t.Fatal(err)
			}
		}
		all := 0
		by = map[string]float64{}
		for m, k := range cs.take() {
			by[m] = float64(k) / cycles
			all += k
		}
		per = float64(all) / cycles
	})
	return per, by
}
