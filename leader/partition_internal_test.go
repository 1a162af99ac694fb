package leader

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-dsync/dsync/dsync"
	"github.com/go-dsync/dsync/dsync/driver/memory"
	"github.com/go-dsync/dsync/leader/internal/shard"
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
		p, err := NewPartition(c, NewMemoryMembers(), "jobs", 1)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		partitionWonHook = func(s int) {
			p.mu.Lock()
			r := p.running[s]
			p.mu.Unlock()
			r.cancel()
			// A sleep in a bubble returns once every other goroutine is
			// blocked: the run's stop has been seen.
			time.Sleep(time.Millisecond)
		}
		defer func() { partitionWonHook = nil }()
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

// While an old owner's report lags behind a handover, two members report
// owning one shard: the view shows the one of the higher token. Statuses
// that are not a partition's, and shards out of range, are left out.
func TestPartitionDecodeHigherTokenWins(t *testing.T) {
	p := &Partition{n: 2}
	st := p.decode([]Member{
		{ID: "old", Value: `{"w":1,"own":[0,5,-1],"tok":[7,9,9]}`},
		{ID: "new", Value: `{"w":1,"own":[0],"tok":[8]}`},
		{ID: "stray", Value: "not json"},
	}, nil)
	if got := st.view.Shards[0]; got.Member != "new" || got.Token != 8 {
		t.Errorf("shard 0: %+v, want new's term 8", got)
	}
	if got := st.view.Shards[1]; got.Member != "" || got.Token != 0 {
		t.Errorf("shard 1 (nobody reports it): %+v", got)
	}
	if len(st.view.Members) != 2 || st.view.Members[0].ID != "new" || st.view.Members[1].ID != "old" {
		t.Errorf("members %+v, want new and old, by ID", st.view.Members)
	}
}

// A member decides on what it owns now, not on its status as last
// written: right after a handover, its own copy in the store does not yet
// list the shard it won, and the old owner's still does. Deciding on those
// copies, the new owner counted the shard as the old owner's, handed
// it back and queued for more than its share of the free shards, each of
// which then moved twice (a leave moved six shards instead of its four).
func TestPartitionDecidesOnItsOwnShards(t *testing.T) {
	p := &Partition{n: 4, weight: 1, self: "c", running: map[int]*shardRun{
		0: {owned: true, token: 8}, // won from b since c's last write
	}}
	read := []Member{
		{ID: "b", Value: `{"w":1,"own":[0,1],"tok":[7,3]}`}, // b's lags too
		{ID: "c", Value: `{"w":1}`},
	}
	st := p.decode(p.withOwnStatus(read), nil)
	if got := st.view.Shards[0]; got.Member != "c" || got.Token != 8 {
		t.Fatalf("shard 0: %+v, want c's term 8", got)
	}
	want := shard.Assign(p.n, st.live, st.owners())
	mine := 0
	for s, id := range want {
		if id == "c" {
			mine++
		}
		if s == 0 && id != "c" {
			t.Errorf("shard 0, which c runs, assigned to %q", id)
		}
	}
	if mine != 2 {
		t.Errorf("c assigned %d of 4 shards (%v), want its share of 2", mine, want)
	}
	if read[1].Value != `{"w":1}` {
		t.Errorf("the statuses read were changed: %q", read[1].Value)
	}
}
