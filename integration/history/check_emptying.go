package history

import (
	"slices"
	"time"
)

// Reset kinds (Event.Kind of an EvReset).
const (
	ResetEmpty   = "empty"   // the collections emptied (or dropped)
	ResetRestore = "restore" // a backup restored: tokens may repeat
)

// checkAcrossEmptyings checks the token order that an emptying keeps: a
// hold's token is larger than that of every conflicting hold that began
// more than gap before the last emptying before it (README, "Guarantees":
// an operator who empties the collections gets tokens above those handed
// out more than a second before). A restore brings older tokens back, so
// holds on either side of one are not compared; within an era, Check's
// own token order applies.
func checkAcrossEmptyings(r *Report, events []Event, gap time.Duration) {
	var empties, restores []int64
	for _, ev := range events {
		if ev.Ev != EvReset {
			continue
		}
		if ev.Kind == ResetRestore {
			restores = append(restores, ev.T)
		} else {
			empties = append(empties, ev.T)
		}
	}
	if len(empties) == 0 {
		return
	}
	slices.Sort(empties)
	slices.Sort(restores)
	// last returns the latest of ts at or before t (ok false if none).
	last := func(ts []int64, t int64) (int64, bool) {
		n, _ := slices.BinarySearch(ts, t+1)
		if n == 0 {
			return 0, false
		}
		return ts[n-1], true
	}
	for key, hs := range r.Holds {
		for _, h := range hs {
			emptied, ok := last(empties, h.Acquired)
			if !ok {
				continue
			}
			restored, anyRestore := last(restores, h.Acquired)
			for _, p := range hs {
				if p.Acquired >= emptied-int64(gap) || anyRestore && p.Acquired < restored || !conflicts(h, p) {
					continue
				}
				if h.Token <= p.Token {
					r.add(KindTokenOrder, key, "%v began at %s, after the emptying at %s, with a token not larger than that of %v, which began at %s, more than %v before it",
						h, ts(h.Acquired), ts(emptied), p, ts(p.Acquired), gap)
				}
			}
		}
	}
}
