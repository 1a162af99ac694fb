package lanemodel

// readerSteps lists what reader i may do next on its own (a step that
// needs no reply).
func (w *world) readerSteps(i int) []func(*world) {
	a := w.actors[i]
	if a.awaiting {
		return nil
	}
	switch a.pc {
	case rStart:
		return []func(*world){func(w *world) { w.rlock(i) }}
	case rWalk:
		return []func(*world){func(w *world) { w.readerWalk(i) }}
	case rWaitMark:
		if w.st.has(id{markID, a.k, 0}) {
			return []func(*world){func(w *world) { w.actors[i].k--; w.actors[i].pc = rWalk }}
		}
		return w.markDead(i, id{claimID, a.k, 0})
	case rHold:
		return []func(*world){func(w *world) { w.runlock(i) }}
	}
	return nil
}

// rlock takes the next read hold: in the lane, one insert of its next
// slot; without one, a root claim of the main sequence with its first slot.
func (w *world) rlock(i int) {
	a := &w.actors[i]
	if a.left == 0 {
		a.pc = finished
		return
	}
	if a.root == 0 {
		a.try = max(a.try, w.floor) // a claim lies above the floor it knows (F3)
		a.pc = rRootSent
		w.send(i, true,
			put{id{claimID, a.try, 0}, doc{owner: i}},
			put{id{slotID, a.try, 1}, doc{owner: i}},
			put{id{shadowID, a.try, 1}, doc{owner: i}})
		return
	}
	// The slot, its shadow, and the last slot's shadow again: its
	// duplicate proves the lane still stored (not emptied, nor pruned).
	a.pc = rSlotSent
	w.send(i, true,
		put{id{slotID, a.root, a.slot + 1}, doc{owner: i}},
		put{id{shadowID, a.root, a.slot + 1}, doc{owner: i}},
		put{id{shadowID, a.root, a.slot}, doc{owner: i}})
}

func (w *world) readerReply(i int, res []result) {
	a := &w.actors[i]
	switch a.pc {
	case rRootSent:
		switch {
		case res[0] == duplicate:
			a.try++ // the epoch exists: the next may be claimed (F1)
			a.pc = rStart
		case res[1] == inserted:
			a.root, a.slot, a.k, a.pc = a.try, 1, a.try-1, rWalk
		default:
			// A writer sealed the lane before its first hold.
			w.laneSealed(i, a.try, 1)
		}
	case rSlotSent:
		switch {
		case res[0] == duplicate:
			w.laneSealed(i, a.root, a.slot+1)
		case res[2] == duplicate || w.v.readerSkipsChain:
			a.slot++
			w.beginRead(i)
		default:
			w.laneLost(i, a.slot+1)
		}
	}
}

// replyLost: the reply to reader i's slot insert never comes (a timeout,
// a broken connection), so it cannot tell whether the slot landed: the
// insert may still land, whole or in part, at any time after. The reader
// takes it as it takes a lost chain: no hold, the slot and the root
// ended, a new root claimed. Its end markers may land before the slot's
// insert: a writer then finds the slot ended, or seals above it.
func (w *world) replyLost(i int) {
	a := &w.actors[i]
	w.loseReply(i)
	if w.v.holdOnLostReply {
		a.slot++
		w.beginRead(i)
		return
	}
	w.laneLost(i, a.slot+1)
}

// laneSealed: the reader's slot was taken, which only a writer's seal
// does. It reads the seal, ends its lane's root and claims anew above the
// writer the seal names.
func (w *world) laneSealed(i, root, slot int) {
	a := &w.actors[i]
	s, ok := w.st[id{slotID, root, slot}]
	if !ok || !s.seal {
		w.fail("reader %d: slot @%d/%d taken by no seal", i, root, slot)
		return
	}
	if w.v.readerIgnoresSeal {
		a.root, a.slot = root, slot
		w.beginRead(i)
		return
	}
	w.send(i, false, put{id{markID, root, 0}, doc{owner: i}})
	a.root, a.slot = 0, 0
	a.try = max(a.try, s.by+1)
	a.pc = rStart
}

// laneLost: the chained shadow was missing, or the root lies below the
// floor, so the lane's documents may be gone: the slot's insert does not
// hold. The reader ends it and its root, and claims anew, above the floor.
func (w *world) laneLost(i, slot int) {
	a := &w.actors[i]
	w.send(i, false,
		put{id{slotMarkID, a.root, slot}, doc{owner: i}},
		put{id{markID, a.root, 0}, doc{owner: i}})
	a.root, a.slot = 0, 0
	a.try = max(a.try, w.floor)
	a.pc = rStart
}

func (w *world) readerWalk(i int) {
	a := &w.actors[i]
	if a.k < max(w.floor, 1) || w.v.readerSkipsWalk {
		// Before it holds, a claim checks that it does not lie below the
		// floor of the gate covering it (package queue's holes, F3): a
		// lane's first hold too, whose seal a prune may have deleted.
		if a.root < w.floor && !w.v.readerSkipsFloor {
			w.laneLost(i, a.slot)
			return
		}
		w.beginRead(i)
		return
	}
	d, ok := w.claimBelow(i)
	if !ok {
		return
	}
	if d.excl {
		a.pc = rWaitMark
		return
	}
	a.k-- // a root of another lane: readers share
}

func (w *world) beginRead(i int) {
	a := &w.actors[i]
	a.holding, a.pc = true, rHold
	if w.holding(i, false) {
		w.fail("reader %d holds @%d/%d while a writer holds", i, a.root, a.slot)
	}
	if r := w.st[id{claimID, a.root, 0}]; a.slot == 1 {
		for x, b := range w.actors {
			if r.after&(1<<x) != 0 && b.pc != finished {
				w.fail("reader %d's root @%d landed after writer %d's claim, and holds before it ended", i, a.root, x)
			}
		}
	}
	tok := a.root*tokenScale + a.slot
	if tok <= w.maxWTok {
		w.fail("reader %d's token %d not above the last writer's %d", i, tok, w.maxWTok)
	}
	w.maxTok = max(w.maxTok, tok)
}

// runlock ends the read hold: one insert of its slot's end marker, sent
// and forgotten (it may land after the reader's next slot).
func (w *world) runlock(i int) {
	a := &w.actors[i]
	a.holding = false
	a.left--
	a.pc = rStart
	w.send(i, false, put{id{slotMarkID, a.root, a.slot}, doc{owner: i}})
}
