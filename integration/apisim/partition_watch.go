package apisim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/internal/clienthook"
	"github.com/go-dsync/dsync/leader"
)

// Partition watchers: in a run with the partition actor, each
// incarnation watches the partition as its users do, through a
// leader.Partition of its own that never runs: its View, polled, and
// what its Observe sends. The history keeps what they saw
// (PartitionReport), and checkPartitionWatch judges it.

// Sources of a PartitionReport.
const (
	WatchPartitionView    = "view"    // Partition.View, polled
	WatchPartitionObserve = "observe" // what Partition.Observe sent
)

// PartitionReport is one view of the partition, as a watcher got it.
type PartitionReport struct {
	Proc, Inc int    // the process and its incarnation (from 1)
	Source    string // WatchPartitionView or WatchPartitionObserve
	// Call is when the read began (for Observe, the earliest it can have:
	// a heartbeat interval and a TTL before T), T when the watcher got
	// the view.
	Call, T time.Time
	Shards  []leader.ShardOwner
}

// partitionWatchPoll bounds the gap between two of a watcher's View
// polls: 200 ms to this.
const partitionWatchPoll = time.Second

// startWatchers starts env's incarnation's partition watchers: one that
// polls View, one that reads Observe's channel. Their draws come from a
// generator of their own, so that they do not move the world's.
func (ps *PartitionSim) startWatchers(env *Env) {
	inc := env.inc
	p := inc.p
	ms := &memberStore{MemberStore: p.w.members, p: p, dead: new(atomic.Bool), id: fmt.Sprintf("s%d-p%d-watch%d", p.w.seed, p.id, inc.n)}
	part, err := leader.NewPartition(env.Client, partitionName, ps.Shards, leader.WithMembers(ms))
	if err != nil {
		panic(err)
	}
	ch := part.Observe(inc.ctx)
	observed := make(chan struct{})
	inc.wg.Add(2)
	go func() {
		defer inc.wg.Done()
		defer close(observed)
		for v := range ch {
			now := time.Now()
			inc.partitionReport(&PartitionReport{Source: WatchPartitionObserve, Call: now.Add(-clienthook.ClientParams(env.Client).RenewInterval - env.TTL()), T: now, Shards: v.Shards})
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(p.w.seed), uint64(p.id<<16|inc.n)^0x7061)) // "pa"
	go func() {
		defer inc.wg.Done()
		for inc.ctx.Err() == nil {
			time.Sleep(time.Duration(200+rng.IntN(int(partitionWatchPoll/time.Millisecond)-200)) * time.Millisecond)
			call := time.Now()
			if v, err := part.View(inc.ctx); err == nil {
				inc.partitionReport(&PartitionReport{Source: WatchPartitionView, Call: call, T: time.Now(), Shards: v.Shards})
			}
		}
		<-observed
		_ = part.Close()
	}()
}

// partitionReport records r, of this incarnation.
func (inc *incarnation) partitionReport(r *PartitionReport) {
	r.Proc, r.Inc = inc.p.id, inc.n
	r.Shards = slices.Clone(r.Shards)
	w := inc.p.w
	w.mu.Lock()
	w.hist.PartitionReports = append(w.hist.PartitionReports, r)
	w.mu.Unlock()
}
