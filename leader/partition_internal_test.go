package leader

import (
	"testing"

	"github.com/go-dsync/dsync/leader/internal/shard"
)

// While an old owner's report lags behind a handover, two members report
// owning one shard: the view shows the one of the higher token. Statuses
// that are not a partition's, and shards out of range, are left out.
func TestPartitionDecodeHigherTokenWins(t *testing.T) {
	p := &Partition{n: 2}
	st := p.decode([]Member{
		{ID: "old", Value: `{"w":1,"own":[0,5,-1],"tok":[7,9,9]}`},
		{ID: "new", Value: `{"w":1,"own":[0],"tok":[8]}`},
		{ID: "stray", Value: "not json"},
	}, nil)
	if got := st.view.Shards[0]; got.Member != "new" || got.Token != 8 {
		t.Errorf("shard 0: %+v, want new's term 8", got)
	}
	if got := st.view.Shards[1]; got.Member != "" || got.Token != 0 {
		t.Errorf("shard 1 (nobody reports it): %+v", got)
	}
	if len(st.view.Members) != 2 || st.view.Members[0].ID != "new" || st.view.Members[1].ID != "old" {
		t.Errorf("members %+v, want new and old, by ID", st.view.Members)
	}
}

// A member decides on what it owns now, not on its status as last
// written: right after a handover, its own copy in the store does not yet
// list the shard it won, and the old owner's still does. Deciding on those
// copies, the new owner counted the shard as the old owner's, handed
// it back and queued for more than its share of the free shards, each of
// which then moved twice (a leave moved six shards instead of its four).
func TestPartitionDecidesOnItsOwnShards(t *testing.T) {
	p := &Partition{n: 4, weight: 1, self: "c", running: map[int]*shardRun{
		0: {owned: true, token: 8}, // won from b since c's last write
	}}
	read := []Member{
		{ID: "b", Value: `{"w":1,"own":[0,1],"tok":[7,3]}`}, // b's lags too
		{ID: "c", Value: `{"w":1}`},
	}
	st := p.decode(p.withOwnStatus(read), nil)
	if got := st.view.Shards[0]; got.Member != "c" || got.Token != 8 {
		t.Fatalf("shard 0: %+v, want c's term 8", got)
	}
	want := shard.Assign(p.n, st.live, st.owners())
	mine := 0
	for s, id := range want {
		if id == "c" {
			mine++
		}
		if s == 0 && id != "c" {
			t.Errorf("shard 0, which c runs, assigned to %q", id)
		}
	}
	if mine != 2 {
		t.Errorf("c assigned %d of 4 shards (%v), want its share of 2", mine, want)
	}
	if read[1].Value != `{"w":1}` {
		t.Errorf("the statuses read were changed: %q", read[1].Value)
	}
}
