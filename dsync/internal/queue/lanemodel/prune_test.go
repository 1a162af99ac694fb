package lanemodel

import "fmt"

// pruneSteps deletes the documents of the lanes whose roots lie below the
// floor (a writer held above them, so each was sealed or closed), in three
// steps a lane: its slots' shadows; then its seals; then its slots and
// their end markers. The claims of the main sequence stay: their pruning
// is package queue's (F2, F3), not the lanes'.
func (w *world) pruneSteps() []step {
	if !w.v.prunes {
		return nil
	}
	lanes := map[int][3]bool{} // by root: shadows, seals, the rest left
	for i, d := range w.st {
		if i.epoch >= w.floor || i.kind == claimID || i.kind == markID {
			continue
		}
		l := lanes[i.epoch]
		switch {
		case i.kind == shadowID:
			l[0] = true
		case i.kind == slotID && d.seal:
			l[1] = true
		default:
			l[2] = true
		}
		lanes[i.epoch] = l
	}
	var out []step
	for root, l := range lanes {
		for part, left := range l {
			if !left || (part == 1 && l[0] && !w.v.pruneSealFirst) {
				continue
			}
			out = append(out, step{what: fmt.Sprintf("prune lane @%d part %d", root, part),
				do: func(w *world) { w.prune(root, part) }})
		}
	}
	return out
}

func (w *world) prune(root, part int) {
	for i, d := range w.st {
		if i.epoch != root || i.kind == claimID || i.kind == markID {
			continue
		}
		isShadow, isSeal := i.kind == shadowID, i.kind == slotID && d.seal
		if (part == 0 && isShadow) || (part == 1 && isSeal) || (part == 2 && !isShadow && !isSeal) {
			delete(w.st, i)
		}
	}
}
