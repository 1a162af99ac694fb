package statuspage

import "github.com/go-dsync/dsync/internal/partitions"

// A Partition is a leader.Partition as the page shows it: its shards read
// on this page, in order. Each shard is the election "NAME#I", listed
// here rather than among the elections; its owner is that election's
// leader (the holder of its lease, with the term's fencing token). Any
// election named like a shard ("x#3") is shown as one.
type Partition struct {
	Name   string  `json:"name"`
	Shards []Shard `json:"shards"`
}

// A Shard is one shard of a partition.
type Shard struct {
	Shard    int    `json:"shard"`
	Election string `json:"election"` // "NAME#I"
	// Owner is the leader of the shard's election: its host, pid, term
	// (the fencing token) and lease; nil when nobody owns the shard.
	Owner *Leader `json:"owner"`
}

// partitionsOf returns the partitions among set's shards.
func partitionsOf(set *partitions.Set[Election]) []Partition {
	ps := []Partition{}
	for _, p := range set.Partitions() {
		sp := Partition{Name: p.Name, Shards: []Shard{}}
		for _, sh := range p.Shards {
			sp.Shards = append(sp.Shards, Shard{Shard: sh.Index, Election: sh.Of.Name, Owner: sh.Of.Leader})
		}
		ps = append(ps, sp)
	}
	return ps
}
