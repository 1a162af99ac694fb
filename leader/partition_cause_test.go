package leader_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// causeLog records why the context of each fn ended (context.Cause),
// once the fn has returned: for the fns that returned as their context
// ended.
type causeLog struct {
	mu     sync.Mutex
	causes []error
}

func (c *causeLog) wrap(fn func(context.Context, int) error) func(context.Context, int) error {
	return func(ctx context.Context, s int) error {
		err := fn(ctx, s)
		if ctx.Err() == nil {
			return err
		}
		c.mu.Lock()
		c.causes = append(c.causes, context.Cause(ctx))
		c.mu.Unlock()
		return err
	}
}

// wait waits, in the bubble's time, until n fns have returned, and
// checks that each one's context ended with want.
func (c *causeLog) wait(t *testing.T, n int, want error, limit time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		c.mu.Lock()
		got := append([]error(nil), c.causes...)
		c.mu.Unlock()
		if len(got) >= n {
			for _, err := range got {
				// A lease lost to an outage wraps dsync.ErrSuspended beside
				// ErrLeadershipLost (the outage grace, the default).
				if !errors.Is(err, want) {
					t.Errorf("a shard's context ended with cause %v, want %v", err, want)
				}
			}
			return
		}
		if time.Since(start) > limit {
			t.Fatalf("%d of %d fns returned after %v (causes %v)", len(got), n, limit, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A shard handed over to a member that joined ends its fn's context with
// ErrShardMoved.
func TestPartitionShardMovedCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		l := newLedger(t)
		var c causeLog
		startRunner(t, w.process(t), 4, c.wrap(l.fn("a")))
		l.waitBalanced(t, 4, map[string]int{"a": 4}, ttl)
		join(t, w.process(t), l, "b", 4)
		l.waitBalanced(t, 4, map[string]int{"a": 2, "b": 2}, 2*ttl)
		c.wait(t, 2, leader.ErrShardMoved, ttl)
	})
}

// When Run ends, every shard's context ends with Run's cause: its ctx's
// cause unchanged, ErrResigned after Resign or Close, or the error an fn
// returned of its own.
func TestPartitionRunEndCause(t *testing.T) {
	errStop := errors.New("stop")
	errFn := errors.New("fn failed")
	for _, tc := range []struct {
		name  string
		end   func(p *leader.Partition, cancel context.CancelCauseFunc, fail chan<- struct{})
		want  error
		ended int // fns whose context ended (the one that failed returned first)
	}{
		{"ctx", func(_ *leader.Partition, cancel context.CancelCauseFunc, _ chan<- struct{}) { cancel(errStop) }, errStop, 4},
		{"Resign", func(p *leader.Partition, _ context.CancelCauseFunc, _ chan<- struct{}) {
			_ = p.Resign(context.Background())
		}, leader.ErrResigned, 4},
		{"Close", func(p *leader.Partition, _ context.CancelCauseFunc, _ chan<- struct{}) { _ = p.Close() }, leader.ErrResigned, 4},
		{"fn error", func(_ *leader.Partition, _ context.CancelCauseFunc, fail chan<- struct{}) { close(fail) }, errFn, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 4
				pr := newProc(t)
				l := newLedger(t)
				var c causeLog
				fail := make(chan struct{})
				hold := l.fn("a")
				fn := c.wrap(func(ctx context.Context, s int) error {
					if s != 0 {
						return hold(ctx, s)
					}
					// Shard 0 fails of its own when the test says so.
					ctx, cancel := context.WithCancel(ctx)
					defer cancel()
					go func() {
						select {
						case <-fail:
							cancel()
						case <-ctx.Done():
						}
					}()
					_ = hold(ctx, s)
					select {
					case <-fail:
						return errFn
					default:
						return nil
					}
				})
				p, err := leader.NewPartition(pr.c, "jobs", n, leader.WithMembers(pr.members))
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				ran := make(chan error, 1)
				go func() { ran <- p.Run(ctx, fn) }()
				l.waitBalanced(t, n, map[string]int{"a": n}, ttl)
				tc.end(p, cancel, fail)
				if err := <-ran; err != tc.want {
					t.Errorf("Run returned %v, want %v", err, tc.want)
				}
				c.mu.Lock()
				causes := c.causes
				c.mu.Unlock()
				if len(causes) != tc.ended {
					t.Fatalf("%d fns returned as their context ended by the end of Run, want %d", len(causes), tc.ended)
				}
				c.wait(t, tc.ended, tc.want, 0)
			})
		})
	}
}

// A shard whose lease is lost (the store went away) ends its fn's
// context with ErrLeadershipLost.
func TestPartitionLostShardCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		pr := w.process(t)
		l := newLedger(t)
		var c causeLog
		startRunner(t, pr, 2, c.wrap(l.fn("a")))
		l.waitBalanced(t, 2, map[string]int{"a": 2}, ttl)
		pr.store.SetReachable(false)
		defer pr.store.SetReachable(true)
		c.wait(t, 2, leader.ErrLeadershipLost, ttl)
	})
}
