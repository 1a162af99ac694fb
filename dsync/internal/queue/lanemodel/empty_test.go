package lanemodel

// emptySteps empties the store, once, while no lock is held or awaited
// (what package dsync allows an operator): every actor between its holds,
// no request that waits for a reply on its way; markers sent and forgotten
// may land after. The epochs of claims after it lie above every epoch
// stored before, as package queue's segments make them (L2): the floor
// rises above them, so that walks stop there and a lane whose root lies
// below it is lost.
func (w *world) emptySteps() []step {
	if !w.v.empties || w.emptied {
		return nil
	}
	for _, a := range w.actors {
		if a.holding || a.awaiting || (a.pc != rStart && a.pc != wStart && a.pc != finished) {
			return nil
		}
	}
	for _, m := range w.flight {
		if m.call {
			return nil
		}
	}
	return []step{{what: "the store is emptied", do: func(w *world) {
		w.st, w.emptied = store{}, true
		w.floor = w.top + 1
	}}}
}
