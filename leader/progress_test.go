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

// A term whose work reports no progress within its deadline ends with
// ErrStalled, before another candidate leads, and that candidate leads
// within the deadline plus one TTL of the term's beginning.
func TestTermStallHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 2 * time.Second
		w := newWorld()
		lost := make(chan error, 1)
		a := newElection(t, w.process(t), leader.WithProgressDeadline(d), leader.OnLost(func(c error) { lost <- c }))
		defer a.Close()
		actx, err := a.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		b := newElection(t, w.process(t))
		defer b.Close()
		bctx, err := b.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Resign(context.Background())
		if took := time.Since(began); took > d+ttl {
			t.Errorf("the next candidate led %v after the stalled term began, more than its deadline plus a TTL (%v)", took, d+ttl)
		}
		if actx.Err() == nil {
			t.Fatal("the next candidate leads while the stalled term's context is live")
		}
		if c := context.Cause(actx); c != leader.ErrStalled {
			t.Errorf("stalled term ended with cause %v, want ErrStalled", c)
		}
		if c := <-lost; c != leader.ErrStalled {
			t.Errorf("OnLost got %v, want ErrStalled", c)
		}
		if bctx.Err() != nil {
			t.Errorf("the next term ended: %v", context.Cause(bctx))
		}
	})
}

// A term whose work reports progress (through a context derived from the
// term's) at half its deadline keeps leading, for many deadlines; under
// Run too.
func TestTermProgressKeepsLeading(t *testing.T) {
	const d = 2 * time.Second
	report := func(ctx context.Context, deadlines int) {
		for range 2 * deadlines {
			time.Sleep(d / 2)
			leader.Progress(ctx)
		}
	}
	t.Run("Campaign", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newElection(t, newProc(t), leader.WithProgressDeadline(d))
			defer e.Close()
			ctx, err := e.Campaign(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			derived, cancel := context.WithCancel(ctx)
			defer cancel()
			report(derived, 20)
			if ctx.Err() != nil {
				t.Fatalf("a term that reported progress every %v ended: %v", d/2, context.Cause(ctx))
			}
			_ = e.Resign(context.Background())
		})
	})
	t.Run("Run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newElection(t, newProc(t), leader.WithProgressDeadline(d))
			defer e.Close()
			errDone := errors.New("done")
			var cause error
			rctx, stop := context.WithCancel(context.Background())
			defer stop()
			err := e.Run(rctx, func(ctx context.Context) error {
				report(ctx, 20)
				if cause = context.Cause(ctx); cause != nil {
					stop() // or Run campaigns again
				}
				return errDone
			})
			if err != errDone || cause != nil {
				t.Fatalf("Run returned %v, its context's cause %v: want fn's error and a live context", err, cause)
			}
		})
	})
}

// Progress reported under any other context does nothing, and keeps no
// stalled term alive.
func TestProgressOutsideATerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 2 * time.Second
		e := newElection(t, newProc(t), leader.WithProgressDeadline(d))
		defer e.Close()
		ctx, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for ctx.Err() == nil {
			leader.Progress(context.Background())
			time.Sleep(d / 4)
		}
		if c := context.Cause(ctx); c != leader.ErrStalled {
			t.Errorf("term ended with %v, want ErrStalled", c)
		}
	})
}

func TestProgressDeadlineRefusesNegative(t *testing.T) {
	if _, err := leader.NewElection(newProc(t).c, "cron", leader.WithProgressDeadline(-time.Second)); err == nil {
		t.Error("a negative progress deadline was accepted")
	}
}

// A Partition shard whose fn is stuck (it reports no progress and ignores
// its context) ends with ErrStalled, and the shard moves to another live
// member while the stuck fn still runs; once that fn returns, the shard
// does not come back.
func TestPartitionStalledShardMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 2 * time.Second
		w := newWorld()
		stuck := make(chan struct{})
		var mu sync.Mutex
		var causes []error
		var stuckRuns int
		a, err := leader.NewPartition(w.process(t).c, "jobs", 1, leader.WithMembers(w.members), leader.WithProgressDeadline(d))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		// Close waits for the stuck fn: a failure before close(stuck)
		// below must free it, or the test would hang in virtual time,
		// which the other members' timers keep moving.
		var unstick sync.Once
		release := func() { unstick.Do(func() { close(stuck) }) }
		defer release()
		actx, acancel := context.WithCancel(context.Background())
		aran := make(chan error, 1)
		go func() {
			aran <- a.Run(actx, func(ctx context.Context, _ int) error {
				mu.Lock()
				stuckRuns++
				mu.Unlock()
				<-stuck // deadlocked: no progress, its context ignored
				mu.Lock()
				causes = append(causes, context.Cause(ctx))
				mu.Unlock()
				return nil
			})
		}()
		for { // a owns the shard, alone
			mu.Lock()
			n := stuckRuns
			mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		began := time.Now()
		l := newLedger(t)
		join(t, w.process(t), l, "b", 1)
		l.waitBalanced(t, 1, map[string]int{"b": 1}, d+ttl+3*time.Second)
		if took := time.Since(began); took > d+ttl+3*time.Second {
			t.Errorf("the stalled shard moved after %v", took)
		}
		release()
		for {
			mu.Lock()
			n := len(causes)
			mu.Unlock()
			if n > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(4 * ttl) // heartbeats in which the shard could move back
		if c, _ := l.counts(); c["b"] != 1 {
			t.Errorf("after the stuck fn returned, b runs %d shards, want the 1 it took", c["b"])
		}
		mu.Lock()
		if stuckRuns != 1 || causes[0] != leader.ErrStalled {
			t.Errorf("a ran the shard %d times, the first ending with %v: want once, ErrStalled", stuckRuns, causes[0])
		}
		mu.Unlock()
		acancel()
		<-aran
	})
}

// Progress under a context of an earlier term, detached from its end
// (context.WithoutCancel keeps its values), keeps no later term alive.
func TestProgressOfAnEarlierTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const d = 2 * time.Second
		e := newElection(t, newProc(t), leader.WithProgressDeadline(d))
		defer e.Close()
		first, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		detached := context.WithoutCancel(first)
		if err := e.Resign(context.Background()); err != nil {
			t.Fatal(err)
		}
		second, err := e.Campaign(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for start := time.Now(); second.Err() == nil; time.Sleep(d / 4) {
			if time.Since(start) > 3*d {
				t.Fatal("the second term did not stall: the first term's context kept it alive")
			}
			leader.Progress(detached)
		}
		if c := context.Cause(second); c != leader.ErrStalled {
			t.Errorf("second term ended with %v, want ErrStalled", c)
		}
	})
}
