package dsync_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
)

// TestResumeOnASlowStoreWithManyHolds: after an outage of the store, a
// process holding eight keys takes every hold back with its token, while
// the store answers each read by ID in 400 ms (a loaded server). The
// resume check reads each claim and its end marker back, and must end
// before the deadline its renewal gives (TTL less TTL/20 = 2.85 s): read
// one after another, sixteen reads took 6.4 s, so the check never passed,
// and the holds came back only as new ones once the grace ran out.
func TestResumeOnASlowStoreWithManyHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		var slow atomic.Bool
		p := memory.New().Process()
		view := p.Intercept(func(ctx context.Context, c memory.Call, _ func() error) error {
			if !slow.Load() || c.Op != "Get" {
				return nil
			}
			select {
			case <-time.After(400 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		c := newClient(t, view, dsync.ClientWithTTL(outTTL), dsync.ClientWithOutageGrace(outGrace))
		ms := make([]*dsync.Mutex, n)
		tokens := make([]uint64, n)
		for i := range ms {
			ms[i] = newMutex(t, c, fmt.Sprintf("k%d", i))
			ms[i].Lock()
			tokens[i] = ms[i].Token()
		}
		p.SetReachable(false) // the only process: the whole store is out
		for _, m := range ms {
			waitLost(t, m, 2*outTTL)
		}
		time.Sleep(outTTL)
		slow.Store(true)
		p.SetReachable(true)
		back := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 4*outTTL)
		defer cancel()
		errs := make(chan error, n)
		for _, m := range ms {
			go func() { errs <- m.LockContext(ctx) }()
		}
		for range ms {
			if err := <-errs; err != nil {
				t.Fatalf("LockContext after the outage = %v; want the hold back", err)
			}
		}
		for i, m := range ms {
			if m.Token() != tokens[i] {
				t.Errorf("k%d held again with token %d; want %d", i, m.Token(), tokens[i])
			}
		}
		t.Logf("%d holds back %v after the store's return, reads by ID taking 400 ms", n, time.Since(back))
		slow.Store(false)
		for _, m := range ms {
			m.Unlock()
		}
	})
}
