package lanemodel

// crash ends actor i's process: it stops holding at once (its lease's
// deadline comes before anyone can prove its session expired), its
// requests on their way still land, and the replies go unheard.
func (w *world) crash(i int) {
	a := &w.actors[i]
	a.pc, a.holding, a.awaiting, a.crashed = finished, false, false, true
	w.crashes++
}

// markDead is the step of waiter i that proves the session of the owner of
// the claim or read hold awaited expired: it inserts that document's end
// marker (dead). The model applies it at once: the waiter waits for it
// anyway, and it may land at any time, its owner being dead.
func (w *world) markDead(i int, awaited id) []func(*world) {
	d, ok := w.st[awaited]
	if !ok || !w.actors[d.owner].crashed {
		return nil
	}
	marker := id{markID, awaited.epoch, 0}
	if awaited.kind == slotID {
		marker = id{slotMarkID, awaited.epoch, awaited.slot}
	}
	if w.st.has(marker) {
		return nil
	}
	return []func(*world){func(w *world) { w.st.insertOne(put{marker, doc{owner: i}}) }}
}
