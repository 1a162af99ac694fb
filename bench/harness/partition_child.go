package harness

import (
	"context"
	"sync"
	"time"
)

// Partitions is a Conn of a library with a partitioned election (a
// sharded singleton): shards of one named job spread over the processes
// that join it, each shard owned by one of them at a time.
type Partitions interface {
	// NewPartition returns a new member of partition name, of shards
	// shards, on this Conn's lease of ttl. A member is joined once (Run)
	// and left once (Close); to join again, make a new one.
	NewPartition(name string, shards int, ttl time.Duration) (Partitioner, error)
}

// A Partitioner is one member of a partition.
type Partitioner interface {
	// Run joins the partition and runs fn once per shard this member
	// owns, under a context cancelled when the shard is lost or handed
	// away; token is the fencing token of the shard's term. It returns
	// once ctx ends and every fn has returned.
	Run(ctx context.Context, fn func(ctx context.Context, shard int, token uint64) error) error
	// Close hands every shard over and leaves the partition.
	Close() error
	// Heartbeat is how often the member refreshes its status.
	Heartbeat() time.Duration
}

// partMember is a child Client's membership of the partition of its spec,
// between "join" and "leave".
type partMember struct {
	mu     sync.Mutex
	p      Partitioner
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
}

// join makes a new member and runs it: "joined <mono> <heartbeat ns>",
// then "start <shard> <token> <mono>" as each shard's fn starts and "end
// <shard> <token> <mono>" just before it returns (the fn holds its shard
// until its context ends).
func (c *childClient) join(ctx context.Context, spec childSpec) {
	pm := &c.part
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if pm.p != nil {
		c.out.say("error join: already a member")
		return
	}
	ps, ok := c.conn.(Partitions)
	if !ok {
		c.out.say("error join: no partitioned election in this library")
		return
	}
	p, err := ps.NewPartition(spec.Key, spec.Shards, spec.TTL)
	if err != nil {
		c.out.say("error new partition:", err)
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	pm.p, pm.cancel, pm.done = p, cancel, make(chan struct{})
	out, done := c.out, pm.done
	out.say("joined", Mono(), int64(p.Heartbeat()))
	go func() {
		defer close(done)
		err := p.Run(rctx, func(ctx context.Context, shard int, token uint64) error {
			out.say("start", shard, token, Mono())
			<-ctx.Done()
			out.say("end", shard, token, Mono())
			return nil
		})
		if err != nil && rctx.Err() == nil {
			out.say("error run:", err)
		}
	}()
}

// leave ends the member's Run and closes it: "leaving <mono>" as it
// starts, "left <mono>" once every shard was handed over.
func (c *childClient) leave() {
	pm := &c.part
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if pm.p == nil {
		c.out.say("error leave: not a member")
		return
	}
	c.out.say("leaving", Mono())
	pm.cancel()
	<-pm.done
	if err := pm.p.Close(); err != nil {
		c.out.say("error close:", err)
		return
	}
	pm.p = nil
	c.out.say("left", Mono())
}
