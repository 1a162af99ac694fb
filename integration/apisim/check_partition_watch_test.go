package apisim

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/leader"
)

// TestCheckPartitionWatch judges what a Partition's watchers report of a
// shard: one token names one owner (a violation), and a token that goes
// back is counted apart.
func TestCheckPartitionWatch(t *testing.T) {
	view := func(source string, ms int, owners ...leader.ShardOwner) *PartitionReport {
		return &PartitionReport{Source: source, Call: at(ms - 5), T: at(ms), Shards: owners}
	}
	own := func(id string, token uint64) leader.ShardOwner { return leader.ShardOwner{Member: id, Token: token} }
	for _, c := range []struct {
		name       string
		h          History
		want, back int
	}{
		{"tokens rise", History{PartitionReports: []*PartitionReport{view(WatchPartitionView, 10, own("a", 1)), view(WatchPartitionView, 20, own("", 0)), view(WatchPartitionView, 30, own("b", 2))}}, 0, 0},
		{"one token, two owners", History{PartitionReports: []*PartitionReport{view(WatchPartitionView, 10, own("a", 1)), view(WatchPartitionView, 20, own("b", 1))}}, 1, 0},
		{"one token, two owners after a newer", History{PartitionReports: []*PartitionReport{view(WatchPartitionView, 10, own("a", 1)), view(WatchPartitionView, 20, own("b", 2)), view(WatchPartitionView, 30, own("c", 1))}}, 1, 1},
		{"a token goes back", History{PartitionReports: []*PartitionReport{view(WatchPartitionObserve, 10, own("a", 1), own("a", 3)), view(WatchPartitionObserve, 20, own("b", 2), own("a", 2))}}, 0, 1},
		{"an emptying starts the tokens again", History{Emptyings: []time.Time{at(15)}, PartitionReports: []*PartitionReport{view(WatchPartitionView, 10, own("a", 5)), view(WatchPartitionView, 20, own("b", 1)), view(WatchPartitionView, 30, own("b", 1))}}, 0, 0},
		{"two watchers", History{PartitionReports: []*PartitionReport{view(WatchPartitionView, 10, own("a", 2)), view(WatchPartitionObserve, 20, own("a", 1))}}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs, back := checkPartitionWatch(&c.h)
			if len(vs) != c.want || len(back) != c.back {
				t.Errorf("%d violations and %d tokens back, want %d and %d: %v %v", len(vs), len(back), c.want, c.back, vs, back)
			}
		})
	}
}
