package harness

import (
	"slices"
	"testing"
	"time"
)

// TestReplayPartitionJoin: member 2 joins members 0 and 1, which own two
// shards each of four; one shard of each moves to it, handed over
// gracefully.
func TestReplayPartitionJoin(t *testing.T) {
	before := []int{0, 0, 1, 1}
	if got := partMinMoves(before, []int{0, 1, 2}); got != 1 {
		t.Errorf("fewest moves = %d, want 1 (4 shards over 3: one member takes 1)", got)
	}
	evs := []partEvent{
		{member: 2, shard: 1, token: 7, start: true, at: 130e6}, // reported before the end it follows
		{member: 0, shard: 1, token: 3, at: 120e6},
		{member: 1, shard: 3, token: 4, at: 150e6},
		{member: 2, shard: 3, token: 8, start: true, at: 160e6},
	}
	ch := replayPartition(before, nil, 100e6, evs)
	if want := []int{0, 2, 1, 2}; !slices.Equal(ch.after, want) {
		t.Fatalf("after %v, want %v", ch.after, want)
	}
	if !partBalanced(ch.after, []int{0, 1, 2}) {
		t.Error("member 2 owns 2 of 4 shards, members 0 and 1 one each: not balanced, though 4/3 rounds to 1 or 2")
	}
	if ch.moved != 2 || ch.overlaps != 0 || ch.balancedAt != 160e6 || ch.ownedAt != 160e6 {
		t.Errorf("moved %d, overlaps %d, balanced at %d, owned at %d; want 2, 0, 160e6, 160e6", ch.moved, ch.overlaps, ch.balancedAt, ch.ownedAt)
	}
	if !slices.Equal(ch.handoffs, []float64{10, 10}) {
		t.Errorf("handoffs %v ms, want [10 10]", ch.handoffs)
	}
}

// TestReplayPartitionKillAndOverlap: a killed member's shards are
// unowned from the kill on; a start while another member's fn of the
// shard runs is an overlap.
func TestReplayPartitionKillAndOverlap(t *testing.T) {
	before := []int{0, 1, 0, 1}
	evs := []partEvent{
		{member: 0, shard: 1, token: 5, start: true, at: 300},
		{member: 0, shard: 3, token: 6, start: true, at: 400},
		{member: 0, shard: 0, token: 7, start: true, at: 500}, // 0 already runs shard 0: no overlap with itself
	}
	ch := replayPartition(before, []int{1}, 100, evs)
	if ch.ownedAt != 400 || ch.moved != 2 || ch.overlaps != 0 || len(ch.handoffs) != 0 {
		t.Errorf("owned at %d, moved %d, overlaps %d, handoffs %v; want 400, 2, 0, none", ch.ownedAt, ch.moved, ch.overlaps, ch.handoffs)
	}
	if !partBalanced(ch.after, []int{0}) || partBalanced(ch.after, []int{0, 1}) {
		t.Errorf("after %v: balanced over member 0 alone, not over 0 and 1", ch.after)
	}
	if got := partMinMoves(before, []int{0}); got != 2 {
		t.Errorf("fewest moves = %d, want 2 (the killed member's)", got)
	}
	// Member 1 alive after all: its fn of shard 1 had not returned.
	ch = replayPartition(before, nil, 100, evs[:1])
	if ch.overlaps != 1 || ch.after[1] != -2 {
		t.Errorf("overlaps %d, owner of shard 1 %d; want 1, -2 (several)", ch.overlaps, ch.after[1])
	}
}

func TestPartMinMoves(t *testing.T) {
	for _, c := range []struct {
		before, members []int
		want            int
	}{
		{[]int{-1, -1, -1, -1}, []int{0}, 4},               // the first member claims everything
		{[]int{0, 0, 0, 0, 0}, []int{0, 1}, 2},             // 5 over 2: the old member keeps 3
		{[]int{0, 0, 1, 1, 2, 2, 3, 3}, []int{0, 1, 2}, 2}, // 3 leaves: its 2 go, nobody else moves
		{[]int{0, 0, 0, 1}, []int{0, 1}, 1},                // unbalanced before: one moves
		{[]int{0, 1}, nil, 0},
	} {
		if got := partMinMoves(c.before, c.members); got != c.want {
			t.Errorf("partMinMoves(%v, %v) = %d, want %d", c.before, c.members, got, c.want)
		}
	}
}

// TestPartitionCheckTokens: a start whose token is not above the
// shard's last is a violation, but one with the last token by the member
// whose term it was (the term taken back after an outage): that one is
// counted as taken back.
func TestPartitionCheckTokens(t *testing.T) {
	pt := newPartTracker(nil, 2, time.Second)
	pt.check([]partEvent{
		{member: 0, shard: 0, token: 5, start: true, at: 1},
		{member: 0, shard: 0, token: 5, at: 2},
		{member: 0, shard: 0, token: 5, start: true, at: 3}, // taken back
		{member: 1, shard: 1, token: 6, start: true, at: 4},
	})
	if pt.violations != 0 || pt.takenBack != 1 {
		t.Fatalf("violations %d, taken back %d; want 0, 1", pt.violations, pt.takenBack)
	}
	pt.check([]partEvent{
		{member: 0, shard: 1, token: 6, start: true, at: 5}, // another member's token
		{member: 1, shard: 0, token: 4, start: true, at: 6}, // below the last
	})
	if pt.violations != 2 || pt.takenBack != 1 {
		t.Fatalf("violations %d, taken back %d; want 2, 1", pt.violations, pt.takenBack)
	}
}
