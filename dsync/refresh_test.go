package dsync_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// slowGates is a store whose gate inserts take a while each, as thousands
// of them in a row take on a real server.
type slowGates struct {
	*memory.Store
	each time.Duration
}

func (s slowGates) Insert(ctx context.Context, d driver.Doc) error {
	if d.Kind == driver.KindGate {
		select {
		case <-time.After(s.each):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.Insert(ctx, d)
}

// TestManyHoldsOutliveBucketBoundaries: a process holding many keys keeps
// them across bucket boundaries, although extending their coverage each
// time a bucket begins takes longer than its TTL (a request per key):
// the extension goes on beside the session's renewals, which must not
// wait for it.
func TestManyHoldsOutliveBucketBoundaries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const span, ttl, keys = 4 * time.Second, time.Second, 40
		store := slowGates{memory.New(), 50 * time.Millisecond} // 2 s a boundary, twice the TTL
		c, err := dsync.NewClient(store, dsync.ClientWithBucketSpan(span), dsync.ClientWithTTL(ttl))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var held []*dsync.Mutex
		for i := range keys {
			m := newMutex(t, c, fmt.Sprintf("k%02d", i))
			m.Lock()
			held = append(held, m)
		}
		time.Sleep(4 * span) // four bucket boundaries
		for _, m := range held {
			select {
			case <-m.Lost():
				t.Fatalf("%s was lost across bucket boundaries", m.Key())
			default:
			}
			m.Unlock()
		}
	})
}
