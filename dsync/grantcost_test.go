package dsync_test

import (
	"context"
	"fmt"
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
// fits them all) as fast as they can for a while, every request taking a
// millisecond of fake time, so that their claims interleave in the queue
// as they do on a real server. The test prints the commands each cycle
// sent, by method, and checks the bound the engine keeps.

// costStore counts the requests one process sends, by method, and makes
// each take a millisecond (of the bubble's fake time).
type costStore struct {
	*memory.Store
	mu sync.Mutex
	n  map[string]int
}

func (s *costStore) count(method string) {
	s.mu.Lock()
	s.n[method]++
	s.mu.Unlock()
	time.Sleep(time.Millisecond)
}

func (s *costStore) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = map[string]int{}
	return n
}

func (s *costStore) Insert(ctx context.Context, d driver.Doc) error {
	s.count("Insert")
	return s.Store.Insert(ctx, d)
}

func (s *costStore) InsertOrdered(ctx context.Context, docs []driver.Doc) (int, error) {
	s.count("InsertOrdered")
	return s.Store.InsertOrdered(ctx, docs)
}

func (s *costStore) InsertEach(ctx context.Context, docs []driver.Doc) []error {
	s.count("InsertEach")
	return s.Store.InsertEach(ctx, docs)
}

func (s *costStore) Get(ctx context.Context, id string) (driver.Doc, bool, error) {
	s.count("Get " + idKind(id))
	return s.Store.Get(ctx, id)
}

func (s *costStore) Delete(ctx context.Context, ids []string) error {
	s.count("Delete")
	return s.Store.Delete(ctx, ids)
}

func (s *costStore) InsertSession(ctx context.Context, sess driver.Session) error {
	s.count("InsertSession")
	return s.Store.InsertSession(ctx, sess)
}

func (s *costStore) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	s.count("RenewSession")
	return s.Store.RenewSession(ctx, id, gen, expires)
}

func (s *costStore) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	s.count("GetSession")
	return s.Store.GetSession(ctx, id)
}

func (s *costStore) Publish(ctx context.Context, e driver.Event) error {
	s.count("Publish")
	return s.Store.Publish(ctx, e)
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

// grantCost runs n processes made by mk over one store for a second of
// fake time after a warm-up, and returns the requests per cycle, in all
// and by method.
func grantCost(t *testing.T, n int, mk func(c *dsync.Client) cycler) (per float64, by map[string]float64) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		stores := make([]*costStore, n)
		cyclers := make([]cycler, n)
		for i := range n {
			stores[i] = &costStore{Store: mem, n: map[string]int{}}
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
	}
}
