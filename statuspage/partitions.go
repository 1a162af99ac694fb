package statuspage

import (
	"github.com/go-dsync/dsync/internal/partitions"
)

// partitionsOf returns the partitions among set's shards (schema.go says
// what the page shows of them).
func partitionsOf(set *partitions.Set[Election]) []Partition {
	ps := []Partition{}
	for _, p := range set.Partitions() {
		sp := Partition{Name: p.Name, Shards: []Shard{}}
		for _, sh := range p.Shards {
			sp.Shards = append(sp.Shards, Shard{Shard: sh.Index, Election: sh.Of.Name, Key: sh.Of.Key, Owner: sh.Of.Leader})
		}
		ps = append(ps, sp)
	}
	return ps
}
