package statuspage

// The shards of a leader.Partition, told apart from other elections for
// the page and for dsync status, so that both show them alike.
//
// A Partition's shard I is the election "NAME#I", whose leader owns it
// with the term's fencing token: the lease, which the Reader reads as an
// election already, is the truth of who owns a shard. The members'
// advertised status (what they own and wait for) is the Partition's own
// bookkeeping, and may lag the leases; it is not read here. An election
// that is not a Partition's but is named like a shard ("x#3") is shown as
// one too: nothing in the store tells them apart.

import (
	"slices"
	"strconv"
	"strings"
)

// ShardOf reads election as a Partition's shard name, "NAME#I": ok when
// NAME is not empty and I is a shard number as the Partition writes it
// (decimal, no sign, no leading zero).
func ShardOf(election string) (partition string, shard int, ok bool) {
	i := strings.LastIndexByte(election, '#')
	if i <= 0 {
		return "", 0, false
	}
	num := election[i+1:]
	if num == "" || len(num) > 9 || num[0] == '0' && num != "0" || strings.TrimLeft(num, "0123456789") != "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return "", 0, false
	}
	return election[:i], n, true
}

// A Sharded is one shard of a partition and what the reader read of it.
type Sharded[T any] struct {
	Index int
	Of    T
}

// A ShardGroup is the shards read of one partition, in shard order.
type ShardGroup[T any] struct {
	Name   string
	Shards []Sharded[T]
}

// A ShardSet gathers the shards among the elections a reader reads. The
// zero ShardSet is empty and ready.
type ShardSet[T any] struct {
	byName map[string][]Sharded[T]
}

// Add adds v, read of election, if election is a shard, and reports
// whether it was.
func (s *ShardSet[T]) Add(election string, v T) bool {
	name, i, ok := ShardOf(election)
	if !ok {
		return false
	}
	if s.byName == nil {
		s.byName = map[string][]Sharded[T]{}
	}
	s.byName[name] = append(s.byName[name], Sharded[T]{Index: i, Of: v})
	return true
}

// Len is the number of partitions gathered.
func (s *ShardSet[T]) Len() int { return len(s.byName) }

// Partitions returns the partitions gathered, by name, each with its
// shards in order.
func (s *ShardSet[T]) Partitions() []ShardGroup[T] {
	ps := make([]ShardGroup[T], 0, len(s.byName))
	for name, shards := range s.byName {
		slices.SortStableFunc(shards, func(a, b Sharded[T]) int { return a.Index - b.Index })
		ps = append(ps, ShardGroup[T]{Name: name, Shards: shards})
	}
	slices.SortFunc(ps, func(a, b ShardGroup[T]) int { return strings.Compare(a.Name, b.Name) })
	return ps
}
