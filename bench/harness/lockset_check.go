package harness

import (
	"cmp"
	"slices"
)

// setHold is one set a process of the lockset scenario held: when it
// called Lock, when Lock returned and when it called Unlock (Mono times,
// read in the process), and each key's number with its token.
type setHold struct {
	proc                       int
	called, acquired, released int64
	keys                       []int
	tokens                     []uint64
}

// checkSetHolds counts, key by key, the holds that overlap an earlier
// one (a hold acquired before another hold of its key, acquired earlier,
// was released) and the holds whose token is not above that of the
// key's hold acquired just before. A hold as reported lies within the
// real one (acquired after Lock returned, released before Unlock was
// called), so reported holds that overlap are real holds that did.
func checkSetHolds(holds []setHold) (overlaps, tokensBelow int) {
	type keyHold struct {
		acquired, released int64
		token              uint64
	}
	byKey := map[int][]keyHold{}
	for _, h := range holds {
		for i, k := range h.keys {
			byKey[k] = append(byKey[k], keyHold{h.acquired, h.released, h.tokens[i]})
		}
	}
	for _, hs := range byKey {
		slices.SortFunc(hs, func(a, b keyHold) int { return cmp.Compare(a.acquired, b.acquired) })
		var releasedLast int64 // the latest release of the holds before
		for i, h := range hs {
			if i > 0 && h.acquired < releasedLast {
				overlaps++
			}
			if i > 0 && h.token <= hs[i-1].token {
				tokensBelow++
			}
			releasedLast = max(releasedLast, h.released)
		}
	}
	return overlaps, tokensBelow
}
