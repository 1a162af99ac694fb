package dsync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// What a grant costs in requests to the store when many readers (or
// semaphore acquisitions) overlap (issue 44): n processes take and release
// the read side of one RWMutex (or one unit of a Semaphore whose limit
// fits them all) as fast as they can for a while, every request taking about
// a millisecond of fake time, so that their claims interleave in the queue
// as they do on a real server. The tests print the requests each cycle
// sent, by method, and check the bounds the engine keeps: two requests
// for one process (the uncontended path), and, for more, a walk that
// reads one run of the queue whatever it holds (driver.RunReader) and
// no session. What still grows with the processes is the race for the
// next epoch: every process that inserts at once tries the same one, and
// each that loses reads a run and tries the next (claimrun.go, run.go).
// Before the runs (issue 44), for 1, 4, 16 and 64 processes: RWMutex 2.00,
// 10.63, 31.67, 73.55 requests per cycle; Semaphore 2.00, 133.00, 311.86,
// 743.37 (this test at bd9e5d8, where it fails its bounds).

// costStore counts the requests one process sends of its claims,
// markers, sessions and events, by method, and makes each take a
// millisecond (of the bubble's fake time). Without runs, it answers runs
// as a store that reads none (FerretDB's), uncounted.
type costStore struct {
	*memory.Store
	noRuns bool
	mu     sync.Mutex
	n      map[string]int
	rng    *rand.Rand
}

func newCostStore(mem *memory.Store, rng *rand.Rand, runs bool) *costStore {
	s := &costStore{n: map[string]int{}, rng: rng, noRuns: !runs}
	s.Store = mem.Intercept(s.count)
	return s
}

// count counts a request, which then takes from half a millisecond to one
// and a half (so that processes do not run in lockstep).
func (s *costStore) count(_ context.Context, c memory.Call, _ func() error) error {
	name := renewalAsOne(c.Op)
	switch name {
	case "Insert", "InsertOrdered", "InsertEach", "Delete", "InsertSession", "RenewSession", "GetSession", "Publish":
	case "Get":
		name += " " + idKind(c.IDs[0])
	case "GetRun":
		if s.noRuns {
			return driver.ErrRunsUnsupported
		}
		// A walk's run ends with its own claim and reads at least 32
		// epochs; a claim that lost an epoch reads the 64 above it
		// (queue's run.go).
		name += " walk"
		if c.To-c.From == 2*32-1 {
			name = "GetRun race"
		}
	default:
		return nil
	}
	s.mu.Lock()
	s.n[name]++
	d := 500*time.Microsecond + time.Duration(s.rng.Int64N(int64(time.Millisecond)))
	s.mu.Unlock()
	time.Sleep(d)
	return nil
}

func (s *costStore) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = map[string]int{}
	return n
}

// idKind names what an ID reads: a claim, a marker, a gate, the protocol
// document.
func idKind(id string) string {
	switch {
	case strings.Contains(id, "~"):
		return "marker"
	case strings.Contains(id, "#g/"):
		return "gate"
	case strings.Contains(id, "#"):
		return "other"
	}
	return "claim"
}

// cycler is one process's loop: take, then give back.
type cycler struct {
	take, give func(context.Context) error
}

// counter is a store that counts the requests sent through it (by
// method, or by purpose); take returns the counts since the last take and
// starts again.
type counter interface {
	driver.Store
	take() map[string]int
}

// grantCost runs n processes made by mk over one store for a second of
// fake time after a warm-up, and returns the requests per cycle, in all
// and by method.
func grantCost(t *testing.T, n int, mk func(c *dsync.Client) cycler) (per float64, by map[string]float64) {
	return churnCost(t, n, func(mem *memory.Store, i int) counter {
		return newCostStore(mem, rand.New(rand.NewPCG(uint64(n), uint64(i))), true)
	}, mk)
}

// churnCost runs n processes made by mk, each over the counter wrap makes
// of one in-memory store, for a second of fake time after a warm-up, and
// returns the requests per cycle, in all and by what the counters count.
func churnCost(t *testing.T, n int, wrap func(mem *memory.Store, i int) counter, mk func(c *dsync.Client) cycler) (per float64, by map[string]float64) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		stores := make([]counter, n)
		cyclers := make([]cycler, n)
		for i := range n {
			stores[i] = wrap(mem, i)
			c := newClient(t, stores[i], dsync.ClientWithIdleAge(0))
			cyclers[i] = mk(c)
		}
		ctx := context.Background()
		var wg sync.WaitGroup
		cycles := make([]int, n)
		start := time.Now().Add(500 * time.Millisecond) // after the warm-up
		until := start.Add(time.Second)
		for i := range n {
			wg.Go(func() {
				for time.Now().Before(until) {
					counting := !time.Now().Before(start)
					if !counting {
						stores[i].take()
					}
					if err := cyclers[i].take(ctx); err != nil {
						t.Error(err)
						return
					}
					if err := cyclers[i].give(ctx); err != nil {
						t.Error(err)
						return
					}
					if counting {
						cycles[i]++
					}
				}
			})
		}
		wg.Wait()
		total, all := 0, 0
		by = map[string]float64{}
		for i := range n {
			for m, k := range stores[i].take() {
				by[m] += float64(k)
				all += k
			}
			total += cycles[i]
		}
		if total == 0 {
			t.Fatal("no cycle completed")
		}
		for m := range by {
			by[m] /= float64(total)
		}
		per = float64(all) / float64(total)
	})
	return per, by
}

func formatBy(by map[string]float64) string {
	var ms []string
	for m := range by {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, " %s %.2f", m, by[m])
	}
	return b.String()
}

// liveCounts are the numbers of overlapping readers or units measured.
var liveCounts = []int{1, 4, 16, 64}

// TestGrantCostRWMutexReaders prints the requests per RLock+RUnlock with 1,
// 4, 16 and 64 processes reading one RWMutex at once.
func TestGrantCostRWMutexReaders(t *testing.T) {
	for _, n := range liveCounts {
		per, by := grantCost(t, n, func(c *dsync.Client) cycler {
			rw, err := dsync.NewRWMutex(c, "k", quiet)
			if err != nil {
				t.Fatal(err)
			}
			return cycler{
				take: rw.RLockContext,
				give: rw.RUnlockContext,
			}
		})
		t.Logf("RWMutex, %2d readers: %.2f requests per RLock+RUnlock:%s", n, per, formatBy(by))
		checkGrantCost(t, n, per, by)
	}
}

// TestGrantCostSemaphoreUnits prints the requests per Acquire(1)+Release(1)
// with 1, 4, 16 and 64 processes holding units of one Semaphore whose
// limit fits them all.
func TestGrantCostSemaphoreUnits(t *testing.T) {
	for _, n := range liveCounts {
		per, by := grantCost(t, n, func(c *dsync.Client) cycler {
			s, err := dsync.NewSemaphore(c, "k", int64(n), quiet)
			if err != nil {
				t.Fatal(err)
			}
			return cycler{
				take: func(ctx context.Context) error { return s.Acquire(ctx, 1) },
				give: func(ctx context.Context) error { return s.ReleaseContext(ctx, 1) },
			}
		})
		t.Logf("Semaphore, %2d units: %.2f requests per Acquire(1)+Release(1):%s", n, per, formatBy(by))
		checkGrantCost(t, n, per, by)
	}
}

// checkGrantCost checks the requests per cycle of n processes: two for
// one; for more, no session read, no marker or claim read by ID past one
// per cycle, one run per walk, and in all at most 0.8 per process beyond
// four (the race for the next epoch).
func checkGrantCost(t *testing.T, n int, per float64, by map[string]float64) {
	t.Helper()
	if n == 1 && per > 2.01 {
		t.Errorf("one process: %.2f requests per cycle, want 2 (the claim and its release)", per)
	}
	if by["GetSession"] > 0.05 {
		t.Errorf("%d processes: %.2f session reads per cycle, want none (a walker passes its own mode's claims live or not)", n, by["GetSession"])
	}
	if byID := by["Get claim"] + by["Get marker"]; byID > 1 {
		t.Errorf("%d processes: %.2f claims and markers read by ID per cycle, want at most 1 (walks read runs)", n, byID)
	}
	if walks := by["GetRun walk"]; walks > 1.1 {
		t.Errorf("%d processes: %.2f runs read by walks per cycle, want one", n, walks)
	}
	if limit := 4 + 0.8*float64(n); per > limit {
		t.Errorf("%d processes: %.2f requests per cycle, want at most %.1f", n, per, limit)
	}
}
