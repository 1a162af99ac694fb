package statuspage

import (
	"context"
	"github.com/go-dsync/dsync/leader/operator"
	"strings"
)

// WalkNamed hands out to out every primitive named name (KeysNamed) that
// exists: whose key something holds or waits for, or that List lists;
// then the shards of partition name that List lists.
func (r *Reader) WalkNamed(ctx context.Context, name string, out Sink) (Listed, error) {
	sum, err := r.begin(ctx)
	if err != nil {
		return sum, err
	}
	for _, key := range KeysNamed(name) {
		if r.MaxKeyLen > 0 && len(key) > r.MaxKeyLen {
			continue // no such primitive: its key would be too long
		}
		q, err := r.Queue(ctx, key)
		if err != nil {
			return sum, err
		}
		if len(q) == 0 {
			if known, err := r.HasKey(ctx, key); err != nil {
				return sum, err
			} else if !known {
				continue
			}
		}
		if err := r.key(ctx, key, q, out, &sum); err != nil {
			return sum, err
		}
	}
	return sum, r.shardsOf(ctx, name, out, &sum)
}

// shardsOf hands out the shards of partition name, the elections
// "name#I", as the library lists them.
func (r *Reader) shardsOf(ctx context.Context, name string, out Sink, sum *Listed) error {
	for ks, err := range r.List(ctx, ListOptions{Prefix: operator.LockKey(name + "#")}) {
		if err != nil {
			return err
		}
		if p, _, ok := ShardOf(strings.TrimPrefix(ks.Key, operator.LockKey(""))); !ok || p != name {
			continue // a shard of another partition ("name#x#0"), or no shard
		}
		if err := r.key(ctx, ks.Key, ks.Queue, out, sum); err != nil {
			return err
		}
	}
	return nil
}
