package lockset_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/dsync/lockset"
)

// TestDeadlockCost: what detection costs a chain of waits that is no
// cycle (A holds "k1" and waits for "k2", which B holds while it waits
// for "k3", held by a single Mutex), counted in the store calls of A's
// and B's Clients. For 0.9·D of waiting, detection on sends exactly what
// it sends off: a wait shorter than D costs no call. Over the next 10·D
// it logs the calls detection adds (the doc's cost: a note per waiting
// claim, then per D a queue read, the hops' reads and their notes).
func TestDeadlockCost(t *testing.T) {
	var short, long [2]map[string]int
	for i, on := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) { short[i], long[i] = chainCalls(t, on) })
	}
	if !maps.Equal(short[0], short[1]) {
		t.Errorf("calls in the first 0.9·D: off %v, on %v; want the same", short[0], short[1])
	}
	var added []string
	for _, op := range slices.Sorted(maps.Keys(long[1])) {
		if n := long[1][op] - long[0][op]; n != 0 {
			added = append(added, fmt.Sprintf("%s %+d", op, n))
		}
	}
	t.Logf("over 10·D of a chain of two waiting sets, detection adds: %v (off: %d calls in all)", added, total(long[0]))
	if long[1]["PutWait"] != 2 || long[0]["PutWait"] != 0 {
		t.Errorf("notes put: off %d, on %d; want 0 and 2 (one per waiting claim)", long[0]["PutWait"], long[1]["PutWait"])
	}
}

// chainCalls counts, by op, the calls of A's and B's Clients in the first
// 0.9·D of the chain's waits and in the 10·D after.
func chainCalls(t *testing.T, on bool) (short, long map[string]int) {
	ctx := context.Background()
	store := memory.New()
	var (
		mu     sync.Mutex
		counts = map[string]int{}
	)
	counted := store.Intercept(func(ctx context.Context, c memory.Call, serve func() error) error {
		mu.Lock()
		counts[c.Op]++
		mu.Unlock()
		return serve()
	})
	take := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := counts
		counts = map[string]int{}
		return out
	}
	var opts []lockset.Option
	if on {
		opts = append(opts, lockset.WithDeadlockTimeout(d))
	}
	single := mutex(t, client(t, store), "k3")
	single.Lock()
	ca, cb := client(t, counted), client(t, counted)
	newSet := func(c *dsync.Client, key string) *lockset.Set {
		s, err := lockset.New(c, []lockset.Member{lockset.Mutex(mutex(t, c, key))}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		mustLock(t, s)
		return s
	}
	b, a := newSet(cb, "k2"), newSet(ca, "k1")
	doneB := make(chan error, 1)
	go func() { doneB <- b.LockMore(ctx, lockset.Mutex(mutex(t, cb, "k3"))) }()
	doneA := make(chan error, 1)
	go func() { doneA <- a.LockMore(ctx, lockset.Mutex(mutex(t, ca, "k2"))) }()
	synctest.Wait()
	take()
	time.Sleep(9 * d / 10)
	short = take()
	time.Sleep(10 * d)
	long = take()
	single.Unlock()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	b.Unlock()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	a.Unlock()
	return short, long
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
