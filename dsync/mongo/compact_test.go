package dsyncmongo

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/go-dsync/dsync/dsync"
)

// TestIdleKeysAreCompactedAndFirstLocksCostTheSame: keys used once and
// left idle past the idle age leave nothing in the lock collection; a
// fresh process's first Lock+Unlock of one of them sends the same
// commands as a fresh process's first Lock+Unlock of the only key of an
// almost empty collection, and gets a token above every one the key had.
func TestIdleKeysAreCompactedAndFirstLocksCostTheSame(t *testing.T) {
	const span, idle, keys = 4 * time.Second, 16 * time.Second, 300
	opts := []Option{WithBucketSpan(span), WithIdleAge(0), WithWakeups(false)}
	big := newProcs(t, 2, opts...)   // a loader and a fresh process
	small := newProcs(t, 2, opts...) // the same, on a collection of one key
	ctx := testCtx(t, 2*time.Minute)

	load := func(p *proc, n int) map[string]uint64 {
		t.Helper()
		tokens := make(map[string]uint64)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < n; i += 8 {
					key := fmt.Sprintf("report-2026-11-23-%d", i)
					m, err := dsync.NewMutex(p.b, key, dsync.WithTTL(2*time.Second))
					if err != nil {
						t.Error(err)
						return
					}
					if err := m.LockContext(ctx); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					tokens[key] = m.Token()
					mu.Unlock()
					m.Unlock()
				}
			})
		}
		wg.Wait()
		return tokens
	}
	bigTokens := load(big[0], keys)
	load(small[0], 1)
	if t.Failed() {
		t.FailNow()
	}
	count := func(p *proc) int64 {
		n, err := p.db.Collection(DefaultCollection).CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	loaded := count(big[0])

	// Past the idle age, and the two buckets a key's coverage reaches.
	time.Sleep(idle + 2*span + time.Second)
	n, err := big[0].b.Client().Compact(ctx, idle)
	if err != nil || n < loaded-1 {
		t.Fatalf("Compact = %d, %v; want the %d documents of the %d idle keys deleted", n, err, loaded-1, keys)
	}
	if left := count(big[0]); left > 1 {
		t.Errorf("%d documents left of %d after compacting every key, want at most the protocol document", left, loaded)
	}
	t.Logf("%d keys: %d documents after loading, %d after compaction", keys, loaded, count(big[0]))

	key := "report-2026-11-23-7"
	bigCmds, token := firstLockUnlock(ctx, t, big[1], key, nil)
	smallCmds, _ := firstLockUnlock(ctx, t, small[1], "report-2026-11-23-0", nil)
	if !maps.Equal(bigCmds, smallCmds) {
		t.Errorf("a fresh process's first Lock+Unlock sent %v after %d keys were compacted, %v on a collection of one key", bigCmds, keys, smallCmds)
	}
	t.Logf("first Lock+Unlock of a fresh process: %v", bigCmds)
	if token <= bigTokens[key] {
		t.Errorf("token %d after compaction, not above the key's earlier %d", token, bigTokens[key])
	}
}
