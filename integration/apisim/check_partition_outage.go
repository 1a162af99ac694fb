package apisim

import (
	"fmt"
	"slices"
	"time"
)

// PromisePartitionStays: over an outage of the whole store that the
// grace covers, "shards stay with their owners": each shard's owner
// takes its term back with the same token, and no other member runs it
// in between (leader.Partition, with dsync.ClientWithOutageGrace).
const PromisePartitionStays = "partition-stays"

// checkPartitionOutages judges, in a calm outage run, each store outage
// at least a TTL shorter than the grace, in a spell free of other faults
// and of changes of membership from settle before it (a rebalance a
// change began may still be under way) to settle after it: the first term of each shard begun in the outage or the settle
// after it is its owner's, with the token it had before.
func checkPartitionOutages(h *History, ms []membership, byShard [][]*Term, settle time.Duration) (vs []Violation, judged int) {
	if h.OutageGrace == 0 || !h.Calm || len(h.TTLs) == 0 {
		return nil, 0
	}
	maxTTL := slices.Max(h.TTLs)
	for _, o := range h.Outages {
		from, to := o.From.Add(-settle), o.To.Add(settle)
		if o.To.Sub(o.From) > h.OutageGrace-maxTTL || partitionChanged(h, ms, o, from, to) {
			continue
		}
		judged++
		for s, ts := range byShard {
			i := slices.IndexFunc(ts, func(t *Term) bool {
				return t.Start.Before(o.From) && t.validEnd().After(o.From) && (t.Lost.IsZero() || !t.Lost.Before(o.From))
			})
			if i < 0 || ts[i].Stalled {
				continue // no owner going into the outage, or its work stalled
			}
			owner := ts[i]
			for _, t := range ts {
				if t == owner || !t.Start.After(owner.Start) || t.Start.After(to) {
					continue
				}
				// The owner's term is taken back.
				if t.Member != owner.Member || t.Token != owner.Token {
					vs = append(vs, Violation{PromisePartitionStays, fmt.Sprintf("shard %d: %v ran after the outage [%v, %v] ended %v", s, t, o.From.Format(tf), o.To.Format(tf), owner)})
				}
				break
			}
		}
	}
	return vs, judged
}

// partitionChanged reports whether anything but outage o changed the
// partition in [from, to]: a member joined, left or crashed, a process
// suffered a fault, a shard's run stalled or its stalled function
// returned, the operator emptied the collections, another outage came.
func partitionChanged(h *History, ms []membership, o Outage, from, to time.Time) bool {
	in := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	for _, m := range ms {
		if in(m.join) || in(m.gone) {
			return true
		}
	}
	for _, pf := range h.ProcFaults {
		if pf.Kind == "store outage" && pf.From.Equal(o.From) {
			continue
		}
		if !pf.To.Before(from) && !pf.From.After(to) {
			return true
		}
	}
	// A run of a shard that stalls has its shard assigned elsewhere, and
	// back once its function returns (leader's avoids): either moves a
	// shard, whoever owned it going into the outage.
	for _, t := range h.Terms {
		if t.Stalled && (in(t.Lost) || in(t.End)) {
			return true
		}
	}
	return h.emptiedBetween(from, to)
}

// takenBack reports whether term b took a's back after an outage of the
// store: an outage run, the same member and token, b begun after a
// ended.
func takenBack(h *History, a, b *Term) bool {
	return h.OutageGrace > 0 && a.Member == b.Member && a.Token == b.Token && !a.End.IsZero() && !b.Start.Before(a.End)
}
