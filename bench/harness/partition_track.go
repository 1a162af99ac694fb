package harness

import (
	"cmp"
	"slices"
)

// partEvent is one shard's fn starting or ending in a member of a
// partition, as the member's process reported it.
type partEvent struct {
	member int // the Client's number in the group
	shard  int
	token  uint64
	start  bool // the fn started; else it is about to return
	at     int64
}

// partChange is what one membership change did: the ownership after it
// and the figures of the events from the change (at t0) on.
type partChange struct {
	after []int // each shard's owner after the events (-1: none, -2: several)
	// balancedAt is the Mono time of the last event (t0 if none): the
	// moment the ownership after the events was reached.
	balancedAt int64
	// ownedAt is when every shard had an owner again, after the last
	// moment one had none (t0 if none ever lacked one).
	ownedAt int64
	// moved counts the starts of a shard in a member other than its last
	// owner (a shard moved twice counts twice).
	moved int
	// handoffs are the times, in ms, from a shard's fn returning in one
	// member to its fn starting in the next.
	handoffs []float64
	// overlaps counts the starts of a shard while another member's fn of
	// it had not returned (as reported: a killed member reports nothing).
	overlaps int
}

// replayPartition applies events, in the order of their Mono times, to the
// ownership before (each shard's owner, -1 for none) from which the
// members in gone were dropped at t0 (killed: their fns never report an
// end).
func replayPartition(before []int, gone []int, t0 int64, events []partEvent) partChange {
	owners := make([][]int, len(before))
	last := slices.Clone(before) // each shard's last owner
	for s, m := range before {
		if m >= 0 && !slices.Contains(gone, m) {
			owners[s] = []int{m}
		}
	}
	unowned := func() int {
		n := 0
		for _, o := range owners {
			if len(o) == 0 {
				n++
			}
		}
		return n
	}
	type end struct {
		member int
		at     int64
	}
	ends := make([]*end, len(before))
	ch := partChange{balancedAt: t0, ownedAt: t0}
	evs := slices.Clone(events)
	slices.SortStableFunc(evs, func(a, b partEvent) int { return cmp.Compare(a.at, b.at) })
	for _, e := range evs {
		if e.shard < 0 || e.shard >= len(before) {
			continue
		}
		s := e.shard
		lacked := unowned() > 0
		if e.start {
			if len(owners[s]) > 0 && !slices.Equal(owners[s], []int{e.member}) {
				ch.overlaps++
			}
			if last[s] != e.member {
				ch.moved++
				if x := ends[s]; x != nil && x.member != e.member && x.at >= t0 {
					ch.handoffs = append(ch.handoffs, ms(e.at-x.at))
				}
			}
			if !slices.Contains(owners[s], e.member) {
				owners[s] = append(owners[s], e.member)
			}
			last[s] = e.member
		} else {
			owners[s] = slices.DeleteFunc(owners[s], func(m int) bool { return m == e.member })
			ends[s] = &end{e.member, e.at}
		}
		ch.balancedAt = max(ch.balancedAt, e.at)
		if lacked && unowned() == 0 {
			ch.ownedAt = e.at
		}
	}
	ch.after = make([]int, len(before))
	for s, o := range owners {
		switch len(o) {
		case 0:
			ch.after[s] = -1
		case 1:
			ch.after[s] = o[0]
		default:
			ch.after[s] = -2
		}
	}
	return ch
}

// partBalanced reports whether every shard of owner has one owner among
// members, each member owning its fair share of them (all weigh the
// same): the shards divided by the members, rounded down or up.
func partBalanced(owner []int, members []int) bool {
	if len(members) == 0 {
		return false
	}
	per := map[int]int{}
	for _, m := range owner {
		if !slices.Contains(members, m) {
			return false
		}
		per[m]++
	}
	lo := len(owner) / len(members)
	hi := lo
	if len(owner)%len(members) != 0 {
		hi++
	}
	for _, m := range members {
		if per[m] < lo || per[m] > hi {
			return false
		}
	}
	return true
}

// partMinMoves is the fewest shards that must change owner to go from the
// ownership before to a balanced one over members: every shard not
// owned by one of them, and those its members own beyond their share
// (the members that own most keep one more, as many as the remainder).
func partMinMoves(before []int, members []int) int {
	if len(members) == 0 {
		return 0
	}
	var counts []int
	for _, m := range members {
		n := 0
		for _, o := range before {
			if o == m {
				n++
			}
		}
		counts = append(counts, n)
	}
	slices.SortFunc(counts, func(a, b int) int { return b - a })
	lo, extra := len(before)/len(members), len(before)%len(members)
	keep := 0
	for i, n := range counts {
		limit := lo
		if i < extra {
			limit++
		}
		keep += min(n, limit)
	}
	return len(before) - keep
}
