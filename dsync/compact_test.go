package dsync_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// TestCompactLeavesNothingAndNeverReusesTokens: keys idle for the idle age
// leave no document in the store, a key in use keeps its own, and a
// compacted key's next hold has a token above every token it had.
func TestCompactLeavesNothingAndNeverReusesTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const span, idle = 4 * time.Second, 16 * time.Second
		store := memory.New()
		c, err := dsync.NewClient(store, dsync.ClientWithBucketSpan(span), dsync.ClientWithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()

		var tokens []uint64
		for _, key := range []string{"report-2026-11-23", "report-2026-11-24", "report-2026-11-25"} {
			m := newMutex(t, c, key)
			for range 3 {
				m.Lock()
				tokens = append(tokens, m.Token())
				m.Unlock()
			}
		}
		busy := newMutex(t, c, "busy")
		busy.Lock()
		defer busy.Unlock()

		if n, err := statuspage.Compact(ctx, c, idle); err != nil || n != 0 {
			t.Fatalf("Compact right after use = %d, %v; want nothing compacted", n, err)
		}
		if _, err := statuspage.Compact(ctx, c, span); err == nil {
			t.Fatal("Compact accepted an idle age below four bucket spans")
		}
		time.Sleep(idle + 3*span)
		n, err := statuspage.Compact(ctx, c, idle)
		if err != nil || n == 0 {
			t.Fatalf("Compact after the idle age = %d, %v; want the idle keys' documents deleted", n, err)
		}
		for _, key := range []string{"report-2026-11-23", "report-2026-11-24", "report-2026-11-25"} {
			if left := docsOf(store, key); left != 0 {
				t.Errorf("%s left %d documents after compaction, want none", key, left)
			}
		}
		if docsOf(store, "busy") == 0 {
			t.Error("the key held throughout was compacted")
		}
		select {
		case <-busy.Lost():
			t.Error("the hold of the busy key was lost while it renewed its lease and its key's gates")
		default:
		}

		m := newMutex(t, c, "report-2026-11-23")
		m.Lock()
		defer m.Unlock()
		for _, old := range tokens {
			if m.Token() <= old {
				t.Fatalf("token %d after compaction, not above %d handed out before", m.Token(), old)
			}
		}
	})
}

// docsOf counts the documents of key in store (claims, shadows, markers,
// gates).
func docsOf(store *memory.Store, key string) int {
	n := 0
	store.Each(func(key2 string) {
		if key2 == key {
			n++
		}
	})
	return n
}

// TestCompactKeepsDoneRecords: compaction keeps a Once's done record,
// however idle its key, unless the Once was told to forget it
// (WithForgetAfter) and that time and the idle age have passed; then the
// next Do runs its function again.
func TestCompactKeepsDoneRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const span, idle, forget = 4 * time.Second, 16 * time.Second, time.Minute
		store := memory.New()
		c, err := dsync.NewClient(store, dsync.ClientWithBucketSpan(span), dsync.ClientWithTTL(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		runs := map[string]int{}
		do := func(key string, opts ...dsync.Option) {
			t.Helper()
			o, err := dsync.NewOnce(c, key, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Do(ctx, func(context.Context) error { runs[key]++; return nil }); err != nil {
				t.Fatalf("Do(%s): %v", key, err)
			}
		}
		do("migrate")
		do("report@10:00", dsync.WithForgetAfter(forget))

		time.Sleep(idle + 3*span)
		if _, err := statuspage.Compact(ctx, c, idle); err != nil {
			t.Fatal(err)
		}
		do("migrate")
		do("report@10:00", dsync.WithForgetAfter(forget))
		if runs["migrate"] != 1 || runs["report@10:00"] != 1 {
			t.Fatalf("after a compaction within the time to forget: runs %v, want one each", runs)
		}

		time.Sleep(forget + idle + 3*span)
		if _, err := statuspage.Compact(ctx, c, idle); err != nil {
			t.Fatal(err)
		}
		do("migrate")
		do("report@10:00", dsync.WithForgetAfter(forget))
		if runs["migrate"] != 1 || runs["report@10:00"] != 2 {
			t.Fatalf("after a compaction past the time to forget: runs %v, want migrate once and the forgotten slot twice", runs)
		}
	})
}

// TestWithForgetAfterMustBePositive: NewOnce refuses a WithForgetAfter
// that is not positive.
func TestWithForgetAfterMustBePositive(t *testing.T) {
	b := dsync.NewMemClient()
	if _, err := dsync.NewOnce(b.Client, "k", dsync.WithForgetAfter(0)); err == nil {
		t.Error("NewOnce accepted WithForgetAfter(0)")
	}
	if _, err := dsync.NewOnce(b.Client, "k", dsync.WithForgetAfter(time.Hour)); err != nil {
		t.Errorf("NewOnce(WithForgetAfter(1h)): %v", err)
	}
}
