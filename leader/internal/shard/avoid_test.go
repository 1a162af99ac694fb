package shard

import (
	"slices"
	"testing"
)

// A shard whose run stalled in a member goes to another member, and no
// other shard moves for it.
func TestAvoidMovesOnlyTheStalledShard(t *testing.T) {
	for k := 2; k <= 6; k++ {
		members := equal(names(k)...)
		cur := Assign(12, members, nil)
		for s := range cur {
			stalled := cur[s]
			avoid := func(shard int, id string) bool { return shard == s && id == stalled }
			got := AssignAvoiding(12, members, cur, avoid)
			if got[s] == stalled || got[s] == "" {
				t.Fatalf("%d members, shard %d stalled in %s: assigned %q", k, s, stalled, got[s])
			}
			for o := range cur {
				if o != s && got[o] != cur[o] {
					t.Errorf("%d members, shard %d stalled: shard %d moved from %s to %s", k, s, o, cur[o], got[o])
				}
			}
		}
	}
}

// A shard that every live member avoids gets no one; avoiding nothing is
// Assign.
func TestAvoidEveryone(t *testing.T) {
	members := equal(names(3)...)
	got := AssignAvoiding(5, members, nil, func(shard int, _ string) bool { return shard == 2 })
	if got[2] != "" {
		t.Errorf("shard avoided by all: assigned %q", got[2])
	}
	for s, id := range got {
		if s != 2 && id == "" {
			t.Errorf("shard %d unassigned: %v", s, got)
		}
	}
	if a, b := Assign(9, members, nil), AssignAvoiding(9, members, nil, nil); !slices.Equal(a, b) {
		t.Errorf("nil avoid: %v, Assign %v", b, a)
	}
}
