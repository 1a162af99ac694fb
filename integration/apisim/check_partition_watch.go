package apisim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// PromisePartitionWatch: one token of a shard names one owner in what a
// watcher of a Partition (View polled, or Observe) reports. Each shard is
// an election of its own, each term of which has its own token.
const PromisePartitionWatch = "partition-watch"

// checkPartitionWatch judges PromisePartitionWatch: per watcher
// (PartitionReport's Proc, Inc and Source) and shard, within what lies
// between two emptyings of the collections (which start the shards'
// tokens again), one token is always reported with one owner. A view
// that shows a shard without an owner (Member ""), or without a token,
// says nothing of its term, and is not judged.
//
// It returns, apart, the reports whose token went back: a view shows each
// shard's owner "as the members last reported them", the report of the
// higher token when two members report it, so once the owner of the later
// term stops reporting the shard (its run stalled or ended, its status
// aged out) while the earlier owner's last status, written before it lost
// the shard and not written again since (its store unreachable), is still
// live, the view shows the earlier term again. The documentation does not
// promise otherwise; the figures count them (PartitionFigures.ViewsBack).
func checkPartitionWatch(h *History) (vs []Violation, back []string) {
	type watcher struct {
		proc, inc int
		source    string
	}
	byWatcher := make(map[watcher][]*PartitionReport)
	for _, r := range h.PartitionReports {
		k := watcher{r.Proc, r.Inc, r.Source}
		byWatcher[k] = append(byWatcher[k], r)
	}
	type seen struct {
		r *PartitionReport
		o ownerReport
	}
	for _, rs := range byWatcher {
		slices.SortStableFunc(rs, func(a, b *PartitionReport) int { return cmp.Compare(a.T.UnixNano(), b.T.UnixNano()) })
		newest := make(map[int]seen)      // by shard: the report of its newest term
		owners := make(map[ownerKey]seen) // by shard and token: its first report in the era
		for _, r := range rs {
			for s, o := range r.Shards {
				if o.Member == "" || o.Token == 0 {
					continue
				}
				cur := ownerReport{s, o.Member, o.Token}
				l, ok := newest[s]
				if ok && h.emptiedBetween(l.r.Call, r.T) {
					// Another era: its tokens start again.
					ok = false
					maps.DeleteFunc(owners, func(k ownerKey, _ seen) bool { return k.shard == s })
				}
				if ok && cur.token < l.o.token {
					back = append(back, fmt.Sprintf("%v: %v after %v: the token went back", r, cur, l.o))
				}
				k := ownerKey{s, cur.token}
				if first, found := owners[k]; !found {
					owners[k] = seen{r, cur}
				} else if first.o.member != cur.member {
					vs = append(vs, Violation{PromisePartitionWatch, fmt.Sprintf("%v: %v after %v: one token, two owners", r, cur, first.o)})
				}
				if !ok || cur.token > l.o.token {
					newest[s] = seen{r, cur}
				}
			}
		}
	}
	slices.Sort(back)
	return vs, back
}

// ownerKey is one term of a shard.
type ownerKey struct {
	shard int
	token uint64
}

// ownerReport is one shard's owner as a PartitionReport showed it.
type ownerReport struct {
	shard  int
	member string
	token  uint64
}

func (o ownerReport) String() string {
	return fmt.Sprintf("shard %d #%d by %s", o.shard, o.token, o.member)
}

func (r *PartitionReport) String() string {
	return fmt.Sprintf("p%d/%d partition %s [%v, %v]", r.Proc, r.Inc, r.Source, r.Call.Format(tf), r.T.Format(tf))
}
