package leader_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
)

// runner is a member whose Run's error the test reads.
type runner struct {
	p      *leader.Partition
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's error, once done is closed
}

func startRunner(t *testing.T, pr *proc, n int, fn func(context.Context, int) error, opts ...leader.Option) *runner {
	t.Helper()
	p, err := leader.NewPartition(pr.c, "jobs", n, append([]leader.Option{leader.WithMembers(pr.members)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{p: p, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); r.err = p.Run(ctx, fn) }()
	t.Cleanup(func() { cancel(); <-r.done; _ = p.Close() })
	return r
}

// fair reports whether every one of ids runs floor(n/k) or ceil(n/k)
// shards and all n run.
func (l *ledger) fair(n int, ids []string) bool {
	c, total := l.counts()
	k := len(ids)
	for _, id := range ids {
		if c[id] < n/k || c[id] > (n+k-1)/k {
			return false
		}
	}
	return total == n
}

// waitFair waits, in the bubble's time, until ids share all n shards
// fairly, and returns how long that took.
func (l *ledger) waitFair(t *testing.T, n int, ids []string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for !l.fair(n, ids) {
		if time.Since(start) > limit {
			c, total := l.counts()
			t.Fatalf("not fair over %v after %v: %v (%d of %d run)", ids, limit, c, total, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// Three members join one by one, each without any crash: the owners hand
// surplus shards over gracefully, each member ends with its fair share,
// each join moves at most ceil(n/k) shards (counted as terms begun, so
// an upper bound), nothing moves once balanced, and the ledger fails the
// test if two fns of one shard ever run at once or a token goes back.
func TestPartitionJoinsOneByOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		const n = 16
		var ids []string
		for k, id := range []string{"a", "b", "c"} {
			before := l.terms
			pr := w.process(t)
			join(t, pr, l, id, n)
			ids = append(ids, id)
			took := l.waitFair(t, n, ids, 2*ttl)
			// The joiner publishes its claims in the heartbeat that made
			// them, so the owners hand over at their next one.
			if beat := clienthook.ClientParams(pr.c).RenewInterval; took > beat*3/2 {
				t.Errorf("join of %s: fair after %v, want within a heartbeat (%v)", id, took, beat)
			}
			// Stay a few heartbeats: a balanced partition moves nothing.
			time.Sleep(3 * ttl)
			if !l.fair(n, ids) {
				c, _ := l.counts()
				t.Fatalf("after %s joined, balance did not last: %v", id, c)
			}
			l.mu.Lock()
			moved := l.terms - before
			l.mu.Unlock()
			members := k + 1
			limit := (n + members - 1) / members
			if k == 0 {
				limit = n // the first member takes every shard
			}
			if moved > limit {
				t.Errorf("join of %s (member %d) moved %d shards, want at most %d", id, members, moved, limit)
			}
			t.Logf("join of %s: fair after %v, %d shards moved (at most %d)", id, took, moved, limit)
		}
	})
}

// Resign hands every shard over and returns once done: by then every fn
// of the member has returned, its Run returns ErrResigned, and the other
// member runs all shards well within a TTL, so the leases were released,
// not left to expire.
func TestPartitionResignHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		a := startRunner(t, w.process(t), 4, l.fn("a"))
		join(t, w.process(t), l, "b", 4)
		l.waitBalanced(t, 4, map[string]int{"a": 2, "b": 2}, 2*ttl)
		start := time.Now()
		if err := a.p.Resign(context.Background()); err != nil {
			t.Fatalf("Resign: %v", err)
		}
		if c, _ := l.counts(); c["a"] != 0 {
			t.Fatalf("Resign returned with %d fns of a running", c["a"])
		}
		<-a.done
		if !errors.Is(a.err, leader.ErrResigned) {
			t.Errorf("Run after Resign returned %v, want ErrResigned", a.err)
		}
		l.waitBalanced(t, 4, map[string]int{"a": 0, "b": 4}, 2*ttl)
		if took := time.Since(start); took >= ttl {
			t.Errorf("handover took %v, want less than a TTL (%v)", took, ttl)
		}
		if err := a.p.Resign(context.Background()); err != nil {
			t.Errorf("Resign with no Run under way: %v", err)
		}
	})
}

// A Resign whose context ends before an fn returns returns the context's
// cause; the handover goes on, and Run returns once the fn has.
func TestPartitionResignContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		a := startRunner(t, newProc(t), 1, func(ctx context.Context, _ int) error {
			started <- struct{}{}
			<-release // ignores its context until the test lets it go
			return nil
		})
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := a.p.Resign(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Resign with an fn that does not return: %v, want the context's cause", err)
		}
		select {
		case <-a.done:
			t.Fatal("Run returned while an fn still ran")
		default:
		}
		close(release)
		<-a.done
		if !errors.Is(a.err, leader.ErrResigned) {
			t.Errorf("Run returned %v, want ErrResigned", a.err)
		}
	})
}

// Close ends a Run under way (no need to cancel its context first) and
// returns after the handover; the Partition then refuses Run.
func TestPartitionCloseEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		a := startRunner(t, w.process(t), 4, l.fn("a"))
		l.waitBalanced(t, 4, map[string]int{"a": 4}, ttl)
		if err := a.p.Close(); err != nil {
			t.Fatal(err)
		}
		if c, _ := l.counts(); c["a"] != 0 {
			t.Fatalf("Close returned with %d fns running", c["a"])
		}
		<-a.done
		if !errors.Is(a.err, leader.ErrResigned) {
			t.Errorf("Run after Close returned %v, want ErrResigned", a.err)
		}
		if err := a.p.Run(context.Background(), l.fn("a")); !errors.Is(err, leader.ErrClosed) {
			t.Errorf("Run after Close: %v, want ErrClosed", err)
		}
	})
}

// One Run at a time per Partition.
func TestPartitionSecondRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger(t)
		a := startRunner(t, newProc(t), 2, l.fn("a"))
		l.waitBalanced(t, 2, map[string]int{"a": 2}, ttl)
		if err := a.p.Run(context.Background(), l.fn("a")); !errors.Is(err, leader.ErrCampaigning) {
			t.Errorf("second Run: %v, want ErrCampaigning", err)
		}
	})
}

// An fn that returns its context's error when its shard is handed away
// (the usual `return ctx.Err()`) does not end Run: only an error of fn's
// own, while the shard is still its, does.
func TestPartitionHandedAwayErrorIsNotFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		own := l.fn("a")
		a := startRunner(t, w.process(t), 4, func(ctx context.Context, s int) error {
			_ = own(ctx, s)
			return ctx.Err()
		})
		l.waitBalanced(t, 4, map[string]int{"a": 4}, ttl)
		join(t, w.process(t), l, "b", 4)
		l.waitBalanced(t, 4, map[string]int{"a": 2, "b": 2}, 2*ttl)
		select {
		case <-a.done:
			t.Fatalf("a's Run ended when shards were handed to b: %v", a.err)
		default:
		}
	})
}

// A shard handed over is no longer among the member's running shards,
// but its fn may still be finishing: Close must wait for it too, and
// not close the shard's Election (which releases its lease) under it,
// or the next owner would run beside it (the ledger fails on overlap).
func TestPartitionCloseWaitsForHandedOverFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		release := make(chan struct{})
		var releaseOnce sync.Once
		letGo := func() { releaseOnce.Do(func() { close(release) }) }
		defer letGo() // also when the test fails before it lets go
		lingering := make(chan int, 1)
		var once sync.Once
		own := l.fn("a")
		a := startRunner(t, w.process(t), 2, func(ctx context.Context, s int) error {
			lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			defer cancel()
			go func() {
				<-ctx.Done()
				first := false
				once.Do(func() { first = true })
				if first { // the shard handed to b finishes slowly
					lingering <- s
					<-release
				}
				cancel()
			}()
			return own(lctx, s)
		})
		l.waitBalanced(t, 2, map[string]int{"a": 2}, ttl)
		join(t, w.process(t), l, "b", 2)
		<-lingering
		closed := make(chan error, 1)
		go func() { closed <- a.p.Close() }()
		time.Sleep(2 * ttl)
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a handed-over fn still ran", err)
		default:
		}
		letGo()
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		l.waitBalanced(t, 2, map[string]int{"a": 0, "b": 2}, 2*ttl)
	})
}
