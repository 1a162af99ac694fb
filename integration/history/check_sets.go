package history

import (
	"slices"
	"strings"
)

// KindSetMember is the Kind of the EvAcquire of a member of a lock set
// (dsync/lockset): WID names the grant (one Lock of the set that returned
// holding), Value the set's size. Each member is also an ordinary hold of
// its key, checked as every hold is.
const KindSetMember = "set-member"

// KindPartialSet: a lock set granted in part: a grant whose recorded
// members are fewer or more than its size, name a key twice, come from
// more than one process, or hold with no token.
const KindPartialSet = "partial-set"

// checkSets checks that every lock-set grant was whole: its process
// recorded a hold of every member, each with a token, all at one grant.
// That no member's key was held by anyone else meanwhile, and that its
// token exceeds the previous holder's, are the exclusion and token checks
// of each key.
func checkSets(r *Report, events []Event) {
	grants := make(map[string][]Event)
	for _, ev := range events {
		if ev.Ev == EvAcquire && ev.Kind == KindSetMember {
			grants[ev.WID] = append(grants[ev.WID], ev)
		}
	}
	r.Sets = len(grants)
	for wid, evs := range grants {
		keys := make([]string, 0, len(evs))
		problem := ""
		for _, ev := range evs {
			keys = append(keys, ev.Key)
			switch {
			case ev.Value != int64(len(evs)):
				problem = "members recorded unlike the set's size"
			case ev.PID != evs[0].PID:
				problem = "members recorded by several processes"
			case ev.Token == 0:
				problem = "a member with no token: " + ev.Key
			}
		}
		slices.Sort(keys)
		if len(slices.Compact(slices.Clone(keys))) != len(keys) {
			problem = "a key recorded twice"
		}
		if problem != "" {
			r.add(KindPartialSet, strings.Join(keys, ","), "set grant %s (%d members recorded, size %d): %s", wid, len(evs), evs[0].Value, problem)
		}
	}
}
