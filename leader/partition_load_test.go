package leader_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
)

// loadedMembers is a member store on a loaded machine, while loaded is
// set: reads are answered late, and status writes so late that their
// sender gave up on them (they are lost).
type loadedMembers struct {
	leader.MemberStore
	loaded *atomic.Bool
}

// answer waits d, or until ctx ends (its cause).
func answer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (m *loadedMembers) PutMember(ctx context.Context, election string, mb leader.Member) error {
	if m.loaded.Load() {
		if err := answer(ctx, ttl); err != nil { // past a status write's deadline
			return err
		}
	}
	return m.MemberStore.PutMember(ctx, election, mb)
}

func (m *loadedMembers) Members(ctx context.Context, election string, maxAge time.Duration) ([]leader.Member, error) {
	if m.loaded.Load() {
		if err := answer(ctx, ttl/6); err != nil {
			return nil, err
		}
	}
	return m.MemberStore.Members(ctx, election, maxAge)
}

// loadedProcess is a process of w whose lock store answers its claims and
// reads late while loaded is set (its lease's renewals go through at
// once, so its leases hold), and whose member status goes through
// loadedMembers; cut cuts its lock store off.
func loadedProcess(t *testing.T, w *world, loaded *atomic.Bool) (pr *proc, cut func(bool)) {
	view := w.store.Process()
	s := view.Intercept(func(ctx context.Context, c memory.Call, _ func() error) error {
		if loaded.Load() && !strings.Contains(c.Op, "Session") {
			return answer(ctx, ttl/6)
		}
		return nil
	})
	return &proc{c: newClient(t, s), members: &loadedMembers{MemberStore: w.members, loaded: loaded}}, view.SetReachable
}

// waitAllRun waits, in the bubble's time, until all n shards run, and
// returns how long that took.
func (l *ledger) waitAllRun(t *testing.T, n int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if c, total := l.counts(); total == n {
			return time.Since(start)
		} else if time.Since(start) > limit {
			t.Fatalf("%d of %d shards run %v after they were lost (TTL %v): %v", total, n, limit, ttl, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A member alone on a store that answers its status writes too late for
// their deadline, but its leases' calls in time, takes its shards again
// within a few TTLs after their leases ran out. Its status aged out, the
// read listed nobody, and the member assigned itself nothing: it stopped
// waiting for the shards it had queued for and left every shard unowned
// for as long as its writes failed.
func TestPartitionAloneRetakesItsShardsOnALoadedStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 4
		var loaded atomic.Bool
		pa, cut := loadedProcess(t, w, &loaded)
		join(t, pa, l, "a", n)
		l.waitBalanced(t, n, map[string]int{"a": n}, 2*ttl)
		loaded.Store(true)
		time.Sleep(2 * ttl) // the statuses age out
		cut(false)          // the leases run out
		for {
			if _, total := l.counts(); total == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cut(true)
		took := l.waitAllRun(t, n, 5*ttl)
		t.Logf("all %d shards run again %v after the last was lost (TTL %v)", n, took, ttl)
	})
}

// Two members on such a store, whose statuses both age out, take every
// shard again within a few TTLs after both lost them.
func TestPartitionPairRetakesTheShardsOnALoadedStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 4
		var loaded atomic.Bool
		pa, cutA := loadedProcess(t, w, &loaded)
		pb, cutB := loadedProcess(t, w, &loaded)
		join(t, pa, l, "a", n)
		join(t, pb, l, "b", n)
		l.waitBalanced(t, n, map[string]int{"a": 2, "b": 2}, 2*ttl)
		loaded.Store(true)
		time.Sleep(2 * ttl)
		cutA(false)
		cutB(false)
		for {
			if _, total := l.counts(); total == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cutA(true)
		cutB(true)
		took := l.waitAllRun(t, n, 5*ttl)
		t.Logf("all %d shards run again %v after the last was lost (TTL %v)", n, took, ttl)
	})
}
