package leader_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader"
	"github.com/go-dsync/dsync/leader/leadertest"
)

// A shard whose wait is given up just as its campaign is won (assigned
// elsewhere, or Run ending) must not run fn: giving the wait up cancels
// the campaign's context, and the Election then releases the lease it
// had just won, so fn would run beside the next owner. The hook stops
// the run right after the win, before it decides.
func TestPartitionGivenUpAsWonDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := dsync.NewClient(memory.New())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p, err := leader.NewPartition(c, "jobs", 1, leader.WithMembers(leadertest.NewMemoryMembers()))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		defer leader.SetPartitionWonHook(func(s int) {
			leader.GiveUpShard(p, s)
			// A sleep in a bubble returns once every other goroutine is
			// blocked: the run's stop has been seen.
			time.Sleep(time.Millisecond)
		})()
		var ran atomic.Int32
		done := make(chan error, 1)
		go func() {
			done <- p.Run(ctx, func(ctx context.Context, shard int) error {
				ran.Add(1)
				<-ctx.Done()
				return nil
			})
		}()
		time.Sleep(time.Second) // less than a heartbeat: no second campaign yet
		if n := ran.Load(); n != 0 {
			// The first win was given up; a later one may run only after
			// the next heartbeat queues it again.
			t.Fatalf("fn ran %d times at once after its campaign was given up", n)
		}
		cancel()
		<-done
	})
}
