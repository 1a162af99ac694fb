package leader_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/operator"
)

// A process's plain locks and elections share one Client (and its
// lease), yet the lock "coll" is not the lease of the election "coll", in
// either order, and no plain lock can name an election's lease.
func TestPlainLockAndElectionOfTheSameNameAreApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		elections := newProc(t).c
		ctx := context.Background()
		if _, err := dsync.NewMutex(elections, operator.LockKey("coll")); err == nil {
			t.Fatalf("a plain lock was made on the lease key %q", operator.LockKey("coll"))
		}
		mu, err := dsync.NewMutex(elections, "coll", clienthook.KeyLogger.(func(*slog.Logger) dsync.Option)(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		if !mu.TryLock() {
			t.Fatalf("TryLock of the plain lock %q failed", mu.Key())
		}
		defer mu.Unlock()

		e, err := leader.NewElection(elections, "coll", quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if info, err := e.Leader(ctx); !errors.Is(err, leader.ErrNoLeader) {
			t.Fatalf("Leader of election coll while the plain lock %q is held = %+v, %v; want ErrNoLeader", mu.Key(), info, err)
		}
		// A Campaign that had to wait for the plain lock's holder would
		// wait forever: it renews its lock.
		type result struct {
			lctx context.Context
			err  error
		}
		done := make(chan result, 1)
		go func() {
			lctx, err := e.Campaign(ctx)
			done <- result{lctx, err}
		}()
		var lctx context.Context
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("Campaign for election coll while the plain lock %q is held: %v", mu.Key(), r.err)
			}
			lctx = r.lctx
		case <-time.After(2 * ttl):
			t.Fatalf("Campaign for election coll still waiting after %v while the plain lock %q is held", 2*ttl, mu.Key())
		}
		if info, err := e.Leader(ctx); err != nil || info.ID != e.ID() {
			t.Fatalf("Leader = %+v, %v; want this candidate, %s", info, err, e.ID())
		}

		// And the other way round: released, the lock is free to take
		// while the election is led.
		mu.Unlock()
		if !mu.TryLock() {
			t.Fatalf("TryLock of the plain lock %q while election coll is led failed", mu.Key())
		}
		time.Sleep(3 * ttl) // several renewals of both, in fake time
		select {
		case <-mu.Lost():
			t.Fatal("the plain lock was lost")
		case <-lctx.Done():
			t.Fatalf("leadership ended: %v", context.Cause(lctx))
		default:
		}
	})
}
