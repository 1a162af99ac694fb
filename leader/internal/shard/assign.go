package shard

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
)

// A Member is a live member of the partition, with its weight: a member
// of weight 2 takes twice the shards of one of weight 1. A weight of zero
// or less takes no shard.
type Member struct {
	ID     string
	Weight float64
}

// Assign returns, for each of n shards, the ID of the member that should
// own it, given the live members and current, the owner of each shard now
// ("" for none; current may be shorter than n, or nil). Owners that are not
// among members count as gone. With no member of positive weight every
// shard gets "".
func Assign(n int, members []Member, current []string) []string {
	return AssignAvoiding(n, members, current, nil)
}

// AssignAvoiding is Assign, except that no shard goes to a member that
// avoid(shard, member) reports: a member whose run of that shard stalled
// and has not returned (its lease is released, but it cannot run the
// shard again until then). Such a member is not kept as the shard's
// owner either. A shard every live member avoids gets "". A nil avoid
// avoids nothing.
func AssignAvoiding(n int, members []Member, current []string, avoid func(shard int, member string) bool) []string {
	if avoid == nil {
		avoid = func(int, string) bool { return false }
	}
	current = keptOwners(current)
	out := make([]string, n)
	live := liveMembers(members)
	if n <= 0 || len(live) == 0 {
		return out
	}
	owned := make(map[string]int, len(live)) // shards each live member owns now
	for s := 0; s < n && s < len(current); s++ {
		owned[current[s]]++
	}
	left := shares(n, live, owned) // shards each live member may still take
	keepWithinShare(out, current, live, left, avoid)
	placeRest(out, live, left, avoid)
	return out
}

// keepWithinShare keeps, in out, every shard whose owner in current is
// live and within its share, and takes what it kept off left. Of an
// owner's shards it keeps the ones it ranks highest, so that which of
// its shards it keeps does not depend on their numbers.
func keepWithinShare(out, current []string, live []Member, left map[string]int, avoid func(int, string) bool) {
	byOwner := map[string][]int{}
	for s := 0; s < len(out) && s < len(current); s++ {
		if _, ok := left[current[s]]; ok && !avoid(s, current[s]) {
			byOwner[current[s]] = append(byOwner[current[s]], s)
		}
	}
	for id, shards := range byOwner {
		w := weightOf(live, id)
		slices.SortFunc(shards, func(a, b int) int { return cmp.Compare(score(b, id, w), score(a, id, w)) })
		keep := min(len(shards), left[id])
		for _, s := range shards[:keep] {
			out[s] = id
		}
		left[id] -= keep
	}
}

// placeRest gives each shard out has no owner for to the member with room
// left that ranks it highest (ties to the smaller ID, so every member
// computes the same assignment), and takes it off that member's room. A
// shard whose members with room all avoid it goes to the member that
// ranks it highest of those that do not, room or not.
func placeRest(out []string, live []Member, left map[string]int, avoid func(int, string) bool) {
	for s := range out {
		if out[s] != "" {
			continue
		}
		best := bestFor(s, live, func(m Member) bool { return left[m.ID] > 0 && !avoid(s, m.ID) })
		if best == "" {
			best = bestFor(s, live, func(m Member) bool { return !avoid(s, m.ID) })
		}
		out[s] = best
		if best != "" {
			left[best]--
		}
	}
}

// bestFor returns the member of live that ranks shard s highest among
// those ok accepts (ties to the smaller ID, so every member computes the
// same), or "" if ok accepts none.
func bestFor(s int, live []Member, ok func(Member) bool) string {
	best, bestScore := "", math.Inf(-1)
	for _, m := range live {
		if !ok(m) {
			continue
		}
		if sc := score(s, m.ID, m.Weight); sc > bestScore || sc == bestScore && m.ID < best {
			best, bestScore = m.ID, sc
		}
	}
	return best
}

// liveMembers returns the members of positive weight, each ID once (the
// first weight given wins), sorted by ID so that nothing depends on the
// caller's order.
func liveMembers(members []Member) []Member {
	seen := map[string]bool{}
	var live []Member
	for _, m := range members {
		if m.Weight > 0 && !math.IsInf(m.Weight, 0) && !seen[m.ID] {
			seen[m.ID] = true
			live = append(live, m)
		}
	}
	slices.SortFunc(live, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return live
}

// shares returns how many shards each live member gets: the floor of its
// quota n·w/W, and one more for as many members as the floors leave
// shards over. Those extra shards go first to members whose quota's
// fraction is largest, and among equal fractions (equal weights) to
// those that own more now, so that balance moves no shard it need not;
// then by ID.
func shares(n int, live []Member, owned map[string]int) map[string]int {
	var total float64
	for _, m := range live {
		total += m.Weight
	}
	type quota struct {
		id    string
		base  int
		frac  float64
		owned int
	}
	qs := make([]quota, len(live))
	given := 0
	for i, m := range live {
		q := float64(n) * m.Weight / total
		base := int(math.Floor(q))
		qs[i] = quota{id: m.ID, base: base, frac: q - float64(base), owned: owned[m.ID]}
		given += base
	}
	slices.SortStableFunc(qs, func(a, b quota) int {
		// Fractions within a rounding error of each other are equal.
		if d := a.frac - b.frac; math.Abs(d) > 1e-9 {
			return cmp.Compare(b.frac, a.frac)
		}
		if c := cmp.Compare(above(b.owned, b.base), above(a.owned, a.base)); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	share := make(map[string]int, len(live))
	for i, q := range qs {
		share[q.id] = q.base
		if i < n-given {
			share[q.id]++
		}
	}
	return share
}

// above is 1 if a member owning owned shards now would have to give one
// up to keep only base, else 0.
func above(owned, base int) int {
	if owned > base {
		return 1
	}
	return 0
}

func weightOf(live []Member, id string) float64 {
	for _, m := range live {
		if m.ID == id {
			return m.Weight
		}
	}
	return 0
}

// score is member id's weighted rendezvous score for shard s: -w/ln(u),
// u uniform in (0,1) from a hash of both. The member with the highest
// score is the one a shard prefers, and with weights each member is
// preferred by shards in proportion to its weight.
func score(s int, id string, w float64) float64 {
	h := fnv.New64a()
	h.Write([]byte(strconv.Itoa(s)))
	h.Write([]byte{0})
	h.Write([]byte(id))
	x := h.Sum64()
	// Mix the bits (FNV's low bits are weak for short inputs), then take
	// 53 of them for a float in (0,1).
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	u := (float64(x>>11) + 0.5) / (1 << 53)
	return -w / math.Log(u)
}
