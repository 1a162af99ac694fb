package statuspage_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/statuspage"
)

// TestReadsFollowTheStoresSpan: a Client that only reads learns the
// store's bucket span again at each read until its first claim: after
// the store was emptied and written first by a process of another span,
// Queue and List find the key that process holds. A span learnt once
// stayed: the reader read every key under the old span's gates and
// found it idle.
func TestReadsFollowTheStoresSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := memory.New()
		reader := newClientOn(t, mem)

		w1 := newClientOn(t, mem, dsync.ClientWithBucketSpan(10*time.Minute))
		m1 := newMutex(t, w1, "k")
		m1.Lock()
		if q, err := statuspage.NewReader(reader).Queue(ctx, "k"); err != nil || len(q) != 1 || !q[0].Holds {
			t.Fatalf("Queue(k) on a store of span 10m = %+v, %v; want its holder", q, err)
		}
		m1.Unlock()
		if err := w1.Close(); err != nil {
			t.Fatal(err)
		}
		mem.Reset()

		w2 := newClientOn(t, mem, dsync.ClientWithBucketSpan(20*time.Minute))
		m2 := newMutex(t, w2, "k")
		m2.Lock()
		defer m2.Unlock()
		synctest.Wait() // the key is recorded in the directory
		if q, err := statuspage.NewReader(reader).Queue(ctx, "k"); err != nil || len(q) != 1 || !q[0].Holds || q[0].Token != m2.Token() {
			t.Errorf("Queue(k) after the store was emptied and written with span 20m = %+v, %v; want its holder (token %d)", q, err, m2.Token())
		}
		if all := listAll(t, reader, statuspage.ListOptions{}); len(all) != 1 || len(all[0].Queue) != 1 || !all[0].Queue[0].Holds {
			t.Errorf("List after the store was emptied and written with span 20m = %+v; want k held", all)
		}
	})
}
