package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/integration/worker"
	"github.com/go-dsync/dsync/internal/testbed/mongotest"
)

// partitionShards is the hammer's number of shards.
const partitionShards = 6

// Fault 9: a leader.Partition of six shards over four worker processes,
// each a member running a function per shard it owns and recording each
// term as a hold of the shard's key. Each round a fault hits a member
// that owns a shard (SIGKILL and a restart, SIGSTOP, cut off from the
// server or its replies, replies delayed, its clock jumped, the server
// restarted), or a member leaves gracefully and joins again; then every
// shard must have an owner among the live members again, spread evenly
// (at most one more on any member than on another). The history checker
// judges every shard's key as a lock's: no two valid holds at once,
// tokens increasing, every loss signalled in time.
func TestPartitionUnderFaults(t *testing.T) {
	t.Parallel()
	srv := mongotest.StartProcess(t)
	db := mongotest.NewClient(t, srv.URI()).Database(mongotest.DatabaseName(t))
	cfg := baseConfig()
	cfg.Mode, cfg.Key, cfg.Register, cfg.Shards = worker.ModePartition, "part", "", partitionShards
	c := newCluster(t, srv.URI(), db, cfg)
	c.viaProxy = true
	c.startN(4, nil)
	// delay-requests needs a guest worker that holds a lock.
	kinds := slices.DeleteFunc(slices.Clone(faultKinds), func(k string) bool { return k == "delay-requests" })
	kinds = append(kinds, "leave")
	kinds = kindsFrom(t, kinds)
	keys := make([]string, partitionShards)
	for s := range keys {
		keys[s] = worker.PartitionKey(cfg.Key, s)
	}
	settle := 60 * time.Second
	if _, ok := c.awaitSettled(keys, settle); !ok {
		t.Fatalf("the shards were not all owned and balanced within %v of the start", settle)
	}
	counts := make(map[string]int)
	var worst time.Duration
	for n := 0; n < rounds(len(kinds), 10*len(kinds)); n++ {
		owners := c.shardOwners(keys)
		var p *proc
		for _, o := range owners {
			if o != nil {
				p = o
				break
			}
		}
		if p == nil {
			t.Fatalf("round %d: no live owner", n)
		}
		kind := kinds[n%len(kinds)]
		counts[kind]++
		t0 := time.Now()
		if kind == "leave" {
			c.leave(p)
		} else {
			c.inject(kind, p, srv)
		}
		took, ok := c.awaitSettled(keys, settle)
		if !ok {
			t.Fatalf("after %s: the shards were not all owned and balanced within %v", kind, settle)
		}
		worst = max(worst, took)
		t.Logf("%s of %s: owned and balanced again %v after the fault ended (%v after it began)", kind, p.name, took.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	}
	r := c.check()
	moves := 0
	for _, k := range keys {
		moves += max(0, len(r.Holds[k])-1)
	}
	t.Logf("partition: %d shards, faults %v; %d holds of shards (%d terms after the first of each), longest wait for owned and balanced after a fault %v",
		partitionShards, counts, r.NumHolds, moves, worst.Round(time.Millisecond))
}

// leave has p leave the partition gracefully (its stdin closed: Run's
// context ends, it hands its shards over and exits), and starts it again.
func (c *cluster) leave(p *proc) {
	c.t.Helper()
	t0 := history.Now()
	p.stdin.Close()
	select {
	case <-p.exited:
		if p.waitErr != nil {
			c.t.Errorf("worker %s (pid %d) left with: %v\n%s", p.name, p.pid, p.waitErr, p.stderr)
		}
	case <-time.After(10*time.Second + 3*c.base.TTL):
		c.t.Errorf("worker %s (pid %d) did not leave in time; killing it", p.name, p.pid)
		p.kill()
	}
	c.fault("leave", p, t0, history.Now())
	c.restart(p)
}

// shardOwners returns the live process that owns each of keys (nil for
// none), by the terms recorded so far: a term begins with its acquire
// event and ends with its end event.
func (c *cluster) shardOwners(keys []string) []*proc {
	type term struct {
		worker string
		pid    int
		token  uint64
	}
	cur := make(map[string]term)
	c.log.each(func(ev history.Event) {
		if !slices.Contains(keys, ev.Key) {
			return
		}
		switch ev.Ev {
		case history.EvAcquire:
			cur[ev.Key] = term{ev.Worker, ev.PID, ev.Token}
		case history.EvEnd:
			if t, ok := cur[ev.Key]; ok && t.pid == ev.PID && t.token == ev.Token {
				delete(cur, ev.Key)
			}
		}
	})
	out := make([]*proc, len(keys))
	for i, k := range keys {
		if t, ok := cur[k]; ok {
			out[i] = c.procOf(history.Event{Worker: t.worker, PID: t.pid})
		}
	}
	return out
}

// awaitSettled waits up to timeout until every shard of keys has a live
// owner and every live process owns as many shards as any other, give or
// take one, and returns how long that took.
func (c *cluster) awaitSettled(keys []string, timeout time.Duration) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < timeout {
		if c.settled(keys) == "" {
			return time.Since(start), true
		}
		time.Sleep(time.Duration(20+rand.IntN(30)) * time.Millisecond)
	}
	c.t.Logf("not settled: %s", c.settled(keys))
	return time.Since(start), false
}

// settled returns "" when every shard has a live owner and the shards are
// balanced over the live processes, else what is missing.
func (c *cluster) settled(keys []string) string {
	owned := make(map[*proc]int)
	for _, p := range c.live() {
		owned[p] = 0
	}
	for i, o := range c.shardOwners(keys) {
		if o == nil {
			return fmt.Sprintf("shard %d has no live owner", i)
		}
		owned[o]++
	}
	lo, hi := len(keys), 0
	for _, n := range owned {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		return fmt.Sprintf("unbalanced: %d to %d shards a member", lo, hi)
	}
	return ""
}
