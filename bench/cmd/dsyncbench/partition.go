package main

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/bench/harness"
	"github.com/go-dsync/dsync/leader"
)

// NewPartition returns a member of a leader.Partition of shards shards on
// the Client of a lease of ttl, its member status in the scenario's
// member collection.
func (c *conn) NewPartition(name string, shards int, ttl time.Duration) (harness.Partitioner, error) {
	l, err := c.lease(ttl)
	if err != nil {
		return nil, err
	}
	ms, err := c.memberStore(l)
	if err != nil {
		return nil, err
	}
	p, err := leader.NewPartition(l.c, name, shards, leader.WithMembers(ms))
	if err != nil {
		return nil, err
	}
	return partition{p: p, hb: l.renew}, nil
}

// partition is a leader.Partition; the token of a shard's term is
// leader.TermOf's.
type partition struct {
	p  *leader.Partition
	hb time.Duration // its heartbeat: the Client's renew interval, the default
}

func (p partition) Run(ctx context.Context, fn func(context.Context, int, uint64) error) error {
	return p.p.Run(ctx, func(ctx context.Context, shard int) error {
		info, _ := leader.TermOf(ctx)
		return fn(ctx, shard, info.Token)
	})
}

func (p partition) Close() error             { return p.p.Close() }
func (p partition) Heartbeat() time.Duration { return p.hb }
