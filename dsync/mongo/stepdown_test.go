package dsyncmongo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// TestStepDownKeepsEveryHold: the primary of a replica set steps down
// (replSetStepDown, as a rolling upgrade or an Atlas maintenance does)
// while one process holds keys, each with a waiter queued in another
// process, and a third key changes hands between them all along (the
// load). Holders whose Lost() closes (a deadline passed in the election:
// the TTL is short) lock again without Unlock, as the outage grace has a
// program do. Afterwards every holder holds with its token of before and
// no waiter held in between: 0 holds lost.
//
// It runs only on a replica set, which this machine cannot start (no
// Docker engine, no mongod): the workflow's replset job runs it.
func TestStepDownKeepsEveryHold(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	const ttl, keys = 3 * time.Second, 8
	ps := newProcs(t, 2, dsync.ClientWithTTL(ttl))
	mongotest.SkipUnlessReplicaSet(t, ctx, ps[0].db.Client())

	holders := make([]*dsync.Mutex, keys)
	tokens := make([]uint64, keys)
	waiters := make([]chan error, keys)
	for i := range holders {
		key := fmt.Sprintf("k%d", i)
		holders[i] = newMutex(t, ps[0].b.Client, key)
		if err := holders[i].LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		tokens[i] = holders[i].Token()
		w := newMutex(t, ps[1].b.Client, key)
		waiters[i] = make(chan error, 1)
		go func() { waiters[i] <- w.LockContext(ctx) }()
	}

	// The load: both processes take "churn" in turns until the end.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var load sync.WaitGroup
	var churned [2]int
	for p := range ps {
		m := newMutex(t, ps[p].b.Client, "churn")
		load.Go(func() {
			for loadCtx.Err() == nil {
				if err := m.LockContext(loadCtx); err != nil {
					continue // the election, or the end
				}
				churned[p]++
				_ = m.UnlockContext(context.WithoutCancel(loadCtx))
			}
		})
	}

	// Each holder locks again when its Lost() closes, as a program does
	// (Lost before the stepdown, so that its deadline timer closes it).
	done := make(chan struct{})
	retakes := make([]chan error, keys)
	for i, m := range holders {
		lost := m.Lost()
		retakes[i] = make(chan error, 1)
		go func() {
			select {
			case <-lost:
				retakes[i] <- m.LockContext(ctx)
			case <-done:
				retakes[i] <- nil
			}
		}()
	}

	mongotest.StepDown(t, ctx, ps[0].db.Client())
	// Three TTLs after the new primary answers: a deadline that passed in
	// the election has been met, the resume checked, the holds locked
	// again, and a waiter that would take over has.
	time.Sleep(3 * ttl)
	close(done)
	for i, m := range holders {
		select {
		case err := <-retakes[i]:
			if err != nil {
				t.Errorf("k%d: LockContext again after the stepdown: %v; want the hold back", i, err)
			}
		case <-ctx.Done():
			t.Fatalf("k%d: still locking again: %v", i, ctx.Err())
		}
		if m.Token() != tokens[i] {
			t.Errorf("k%d: token %d after the stepdown, %d before", i, m.Token(), tokens[i])
		}
		select {
		case <-m.Lost():
			t.Errorf("k%d: lost after the stepdown: %v", i, m.Err())
		default:
		}
	}
	for i := range waiters {
		select {
		case err := <-waiters[i]:
			t.Errorf("k%d: the waiter's Lock returned (%v) while the holder held", i, err)
		default:
		}
	}
	stopLoad()
	load.Wait()
	t.Logf("stepdown at TTL %v: %d holders kept their holds with their tokens; the churned key held %d and %d times",
		ttl, keys, churned[0], churned[1])
	for _, m := range holders {
		if err := m.UnlockContext(ctx); err != nil {
			t.Errorf("Unlock: %v", err)
		}
	}
	for i := range waiters {
		if err := <-waiters[i]; err != nil {
			t.Errorf("k%d: the waiter's Lock after the holder's Unlock: %v", i, err)
		}
	}
}
