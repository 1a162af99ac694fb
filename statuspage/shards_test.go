package statuspage

import (
	"slices"
	"strconv"
	"testing"
)

func TestShardOf(t *testing.T) {
	for _, tc := range []struct {
		election, partition string
		shard               int
		ok                  bool
	}{
		{"jobs#0", "jobs", 0, true},
		{"jobs#15", "jobs", 15, true},
		{"a#b#2", "a#b", 2, true},
		{"jobs", "", 0, false},
		{"#3", "", 0, false},
		{"jobs#", "", 0, false},
		{"jobs#01", "", 0, false},
		{"jobs#-1", "", 0, false},
		{"jobs#+1", "", 0, false},
		{"jobs#1x", "", 0, false},
		{"jobs#1234567890", "", 0, false},
	} {
		p, s, ok := ShardOf(tc.election)
		if p != tc.partition || s != tc.shard || ok != tc.ok {
			t.Errorf("ShardOf(%q) = %q, %d, %v; want %q, %d, %v", tc.election, p, s, ok, tc.partition, tc.shard, tc.ok)
		}
	}
}

func TestSetGroupsAndOrders(t *testing.T) {
	var s ShardSet[string]
	for _, e := range []string{"jobs#10", "other", "b#0", "jobs#2", "jobs#0"} {
		s.Add(e, "v"+e)
	}
	ps := s.Partitions()
	if s.Len() != 2 || len(ps) != 2 || ps[0].Name != "b" || ps[1].Name != "jobs" {
		t.Fatalf("partitions %+v; want b, then jobs", ps)
	}
	var idx []int
	for _, sh := range ps[1].Shards {
		idx = append(idx, sh.Index)
		if sh.Of != "vjobs#"+strconv.Itoa(sh.Index) {
			t.Errorf("shard %d carries %q", sh.Index, sh.Of)
		}
	}
	if !slices.Equal(idx, []int{0, 2, 10}) {
		t.Errorf("jobs' shards %v; want 0, 2, 10 in order", idx)
	}
}
