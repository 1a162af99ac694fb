package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func equal(ids ...string) []Member {
	ms := make([]Member, len(ids))
	for i, id := range ids {
		ms[i] = Member{ID: id, Weight: 1}
	}
	return ms
}

func names(k int) []string {
	ids := make([]string, k)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	return ids
}

func counts(a []string) map[string]int {
	c := map[string]int{}
	for _, id := range a {
		c[id]++
	}
	return c
}

// checkShares fails unless every member of positive weight has the floor
// or the ceiling of its quota, and every shard an owner among them.
func checkShares(t *testing.T, n int, members []Member, a []string) {
	t.Helper()
	live := liveMembers(members)
	var total float64
	for _, m := range live {
		total += m.Weight
	}
	c := counts(a)
	sum := 0
	for _, m := range live {
		q := float64(n) * m.Weight / total
		if got := c[m.ID]; float64(got) < math.Floor(q)-1e-9 || float64(got) > math.Ceil(q)+1e-9 {
			t.Errorf("n=%d: %s (weight %v) has %d shards, quota %.3f", n, m.ID, m.Weight, got, q)
		}
		sum += c[m.ID]
	}
	if sum != n {
		t.Errorf("n=%d: %d shards owned by members, want all (%v)", n, sum, a)
	}
}

func TestBalancedFromScratch(t *testing.T) {
	for n := 1; n <= 40; n++ {
		for k := 1; k <= 12; k++ {
			a := Assign(n, equal(names(k)...), nil)
			checkShares(t, n, equal(names(k)...), a)
			c := counts(a)
			lo, hi := n, 0
			for _, id := range names(k) {
				lo, hi = min(lo, c[id]), max(hi, c[id])
			}
			if hi-lo > 1 {
				t.Errorf("n=%d over %d equal members: %d to %d shards each", n, k, lo, hi)
			}
		}
	}
}

func TestWeightedShares(t *testing.T) {
	members := []Member{{"small", 1}, {"medium", 2}, {"large", 3}}
	a := Assign(12, members, nil)
	if c := counts(a); c["small"] != 2 || c["medium"] != 4 || c["large"] != 6 {
		t.Errorf("12 shards over weights 1, 2, 3: %v, want 2, 4, 6", c)
	}
	for n := 1; n <= 30; n++ {
		checkShares(t, n, members, Assign(n, members, nil))
	}
}

func TestSameWhateverTheOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	members := equal(names(7)...)
	members[3].Weight = 2.5
	want := Assign(50, members, nil)
	cur := slices.Clone(want)
	cur[0], cur[1] = "gone", ""
	wantFrom := Assign(50, members, cur)
	for range 20 {
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		if got := Assign(50, members, nil); !slices.Equal(got, want) {
			t.Fatalf("members in another order: %v, want %v", got, want)
		}
		if got := Assign(50, members, cur); !slices.Equal(got, wantFrom) {
			t.Fatalf("members in another order, from owners: %v, want %v", got, wantFrom)
		}
	}
}

// An assignment given again its own result changes nothing.
func TestFixedPoint(t *testing.T) {
	for k := 1; k <= 9; k++ {
		members := equal(names(k)...)
		a := Assign(16, members, nil)
		if b := Assign(16, members, a); !slices.Equal(a, b) {
			t.Errorf("%d members: %v then %v", k, a, b)
		}
	}
}

// minMoves is the fewest shards any assignment with the new shares must
// move from cur: those not owned by a member that stays, and each
// staying member's shards beyond its new share.
func minMoves(cur, next []string, members []Member) int {
	c, share := counts(cur), counts(next)
	live := map[string]bool{}
	for _, m := range liveMembers(members) {
		live[m.ID] = true
	}
	moves := 0
	for id, k := range c {
		if !live[id] {
			moves += k
		} else {
			moves += max(0, k-share[id])
		}
	}
	return moves
}

func moved(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// Members join and leave at random: every assignment is balanced, moves
// only the shards balance forces it to (and, at equal weights, a join of
// the k-th member moves at most ceil(n/k)), and a shard that moves goes
// to a member that is live.
func TestChangesMoveTheFewest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 16, 64} {
		var members []Member
		var cur []string
		next := 0
		for step := range 400 {
			before := slices.Clone(members)
			join := len(members) < 2 || len(members) < 12 && rng.IntN(2) == 0
			if join {
				members = append(members, Member{ID: fmt.Sprintf("j%03d", next), Weight: 1})
				next++
			} else {
				i := rng.IntN(len(members))
				members = slices.Delete(members, i, i+1)
			}
			a := Assign(n, members, cur)
			checkShares(t, n, members, a)
			if cur != nil {
				if got, least := moved(cur, a), minMoves(cur, a, members); got != least {
					t.Fatalf("n=%d step %d (%v -> %v): moved %d shards, the fewest is %d", n, step, before, members, got, least)
				}
				if k := len(members); join && moved(cur, a) > (n+k-1)/k {
					t.Fatalf("n=%d step %d: the join of member %d moved %d shards, more than ceil(%d/%d)", n, step, k, moved(cur, a), n, k)
				}
			}
			cur = a
		}
	}
}

// The shards of a member that leaves spread over the others.
func TestLeaverSpreads(t *testing.T) {
	members := equal(names(8)...)
	a := Assign(64, members, nil)
	b := Assign(64, members[1:], a)
	gained := map[string]int{}
	for s := range a {
		if a[s] != b[s] {
			if a[s] != members[0].ID {
				t.Errorf("shard %d moved from %s, which stayed", s, a[s])
			}
			gained[b[s]]++
		}
	}
	if len(gained) != 7 {
		t.Errorf("the leaver's 8 shards went to %v, want each of the 7 others", gained)
	}
}

func TestEdges(t *testing.T) {
	if a := Assign(3, nil, nil); !slices.Equal(a, []string{"", "", ""}) {
		t.Errorf("no members: %q", a)
	}
	if a := Assign(0, equal("a"), nil); len(a) != 0 {
		t.Errorf("no shards: %q", a)
	}
	if a := Assign(2, []Member{{"a", 0}, {"b", -1}, {"c", math.Inf(1)}, {"d", math.NaN()}}, nil); !slices.Equal(a, []string{"", ""}) {
		t.Errorf("no member of a usable weight: %q", a)
	}
	// An ID given twice counts once, with its first weight.
	a := Assign(6, []Member{{"a", 1}, {"a", 5}, {"b", 1}}, nil)
	if c := counts(a); c["a"] != 3 || c["b"] != 3 {
		t.Errorf("a listed twice: %v", c)
	}
	// Owners of shards beyond n are ignored.
	if a := Assign(2, equal("a", "b"), []string{"a", "a", "a", "a"}); counts(a)["a"] != 1 {
		t.Errorf("current longer than n: %q", a)
	}
}

// Shards are ranked by rendezvous hashing, not dealt out by number: from
// scratch, neighbouring shards rarely share an owner (blocks of 8 would
// make 56 of 63 neighbours share one; about 8 do by chance).
func TestNotByNumber(t *testing.T) {
	a := Assign(64, equal(names(8)...), nil)
	same := 0
	for s := 1; s < len(a); s++ {
		if a[s] == a[s-1] {
			same++
		}
	}
	if same > 20 {
		t.Errorf("%d of 63 neighbouring shards share an owner: %v", same, a)
	}
}
