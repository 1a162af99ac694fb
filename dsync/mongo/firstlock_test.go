package dsyncmongo

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/go-dsync/dsync/dsync"
)

// TestFirstLockOfAKeyInUseCostsTheSame: a fresh process's first
// Lock+Unlock of a key that another process locked and unlocked moments
// before (its queue live, its history in the collection, as a cron job
// finds the key of the run before) sends the same commands whether the
// lock collection holds that key alone or hundreds of other keys used
// within the idle age too, and every command it sends to the lock
// collection finds or deletes documents by _id alone: FerretDB answers
// any other filter by decoding the whole collection.
func TestFirstLockOfAKeyInUseCostsTheSame(t *testing.T) {
	t.Parallel()
	const others, runs, key = 300, 20, "report-2026-11-25"
	// Nothing compacted: every key's documents stay in the collection. A
	// bucket of an hour keeps the two collections' gates alike (a new
	// bucket's gate would carry a floor, and the first Lock would start
	// from there).
	opts := []any{dsync.ClientWithIdleAge(0), withoutWakeups(), dsync.ClientWithBucketSpan(time.Hour), dsync.ClientWithTTL(2 * time.Second)}
	big := newProcs(t, 2, opts...)   // a process using the keys, and a fresh one
	small := newProcs(t, 2, opts...) // the same, on a collection of the one key
	ctx := testCtx(t, 3*time.Minute)

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < others; i += 8 {
				m, err := dsync.NewMutex(big[0].b.Client, fmt.Sprintf("job-%d", i))
				if err == nil {
					err = m.LockContext(ctx)
				}
				if err == nil {
					err = m.UnlockContext(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var last [2]uint64
	for i, p := range []*proc{big[0], small[0]} {
		for range runs {
			last[i] = lockUnlockOnce(ctx, t, p, key)
		}
	}

	// byID notes the lock collection's finds and deletes whose filter is
	// not {_id: <string>}.
	var mu sync.Mutex
	var scans []string
	byID := func(e *event.CommandStartedEvent) {
		coll, filters := "", []bson.Raw(nil)
		switch e.CommandName {
		case "find":
			coll = e.Command.Lookup("find").StringValue()
			filters = append(filters, e.Command.Lookup("filter").Document())
		case "delete":
			coll = e.Command.Lookup("delete").StringValue()
			vals, _ := e.Command.Lookup("deletes").Array().Values()
			for _, v := range vals {
				filters = append(filters, v.Document().Lookup("q").Document())
			}
		}
		if coll != DefaultCollection {
			return
		}
		for _, f := range filters {
			elems, _ := f.Elements()
			if len(elems) != 1 || elems[0].Key() != "_id" || elems[0].Value().Type != bson.TypeString {
				mu.Lock()
				scans = append(scans, fmt.Sprintf("%s %v", e.CommandName, f))
				mu.Unlock()
			}
		}
	}
	bigCmds, bigToken := firstLockUnlock(ctx, t, big[1], key, byID)
	smallCmds, smallToken := firstLockUnlock(ctx, t, small[1], key, byID)
	if !maps.Equal(bigCmds, smallCmds) {
		t.Errorf("a fresh process's first Lock+Unlock of a key in use sent %v beside %d other keys, %v on a collection of that key alone", bigCmds, others, smallCmds)
	}
	if bigToken <= last[0] || smallToken <= last[1] {
		t.Errorf("tokens %d and %d after %d and %d", bigToken, smallToken, last[0], last[1])
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range scans {
		t.Errorf("a command of the first Lock+Unlock filters the lock collection on more than _id: %s", s)
	}
	t.Logf("first Lock+Unlock of a key in use, by a fresh process: %v", bigCmds)
}
