package history

import "time"

// checkExclusion checks that no two holds of key that conflict were valid
// at once, in their validity intervals [Acquired, ValidEnd]: readers may
// share a key, and weighted holds of one limit while their weights fit
// it. hs are the holds of key in the order they began.
func checkExclusion(r *Report, key string, hs []*Hold) {
	// valid: the holds whose validity had not ended when the hold being
	// looked at began.
	var valid []*Hold
	for _, h := range hs {
		valid = validAt(valid, h.Acquired)
		weight := h.Weight
		for _, v := range valid {
			if conflicts(h, v) {
				r.add(KindOverlap, key, "%v acquired at %s while %v was valid until %s (%v overlap)",
					h, ts(h.Acquired), v, ts(v.ValidEnd()), time.Duration(v.ValidEnd()-h.Acquired))
			} else if h.Mode == ModeWeighted {
				weight += v.Weight
			}
		}
		if h.Mode == ModeWeighted && weight > h.Limit {
			r.add(KindOverlap, key, "%v acquired at %s with weight %d while holds weighing %d were valid: %d over the limit %d",
				h, ts(h.Acquired), h.Weight, weight-h.Weight, weight, h.Limit)
		}
		valid = append(valid, h)
	}
}

// validAt keeps, in place, the holds of hs still valid at t.
func validAt(hs []*Hold, t int64) []*Hold {
	live := hs[:0]
	for _, v := range hs {
		if t < v.ValidEnd() {
			live = append(live, v)
		}
	}
	return live
}
