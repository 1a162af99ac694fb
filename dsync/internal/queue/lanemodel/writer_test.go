package lanemodel

import (
	"fmt"
	"slices"
)

// writerSteps lists what writer i may do next on its own: its program's
// step, and giving up (a timeout: its claim withdrawn, its requests on
// their way still landing) wherever it waits.
func (w *world) writerSteps(i int) []step {
	a := w.actors[i]
	var steps []func(*world)
	switch a.pc {
	case wStart:
		steps = append(steps, func(w *world) { w.lock(i) })
	case wWalk:
		steps = append(steps, func(w *world) { w.writerWalk(i) })
	case wWaitMark:
		switch {
		case w.st.has(id{markID, a.k, 0}):
			steps = append(steps, func(w *world) { w.actors[i].k--; w.actors[i].pc = wWalk })
		case a.tryLock:
			steps = append(steps, func(w *world) { w.tryFails(i) })
		default:
			steps = append(steps, w.markDead(i, id{claimID, a.k, 0})...)
		}
	case wScan:
		steps = append(steps, func(w *world) { w.scan(i) })
	case wWaitSlot:
		switch {
		case w.lastHoldEnded(a):
			steps = append(steps, func(w *world) { w.actors[i].k--; w.actors[i].pc = wWalk })
		case a.tryLock:
			steps = append(steps, func(w *world) { w.tryFails(i) })
		default:
			steps = append(steps, w.markDead(i, id{slotID, a.k, a.j - 1})...)
		}
	case wHold:
		steps = append(steps, func(w *world) { w.unlock(i) })
	}
	if a.awaiting && a.pc != wSealSent && a.pc != wSealsSent {
		return nil
	}
	out := make([]step, 0, len(steps)+1)
	for _, f := range steps {
		out = append(out, step{what: fmt.Sprintf("writer %d at %d", i, a.pc), do: f})
	}
	if a.own != 0 && a.pc != wHold && a.pc != finished {
		out = append(out, step{what: fmt.Sprintf("writer %d gives up", i), do: func(w *world) { w.giveUp(i) }, giveUp: true})
	}
	return out
}

// lastHoldEnded says whether the read hold below the end (slot j) of the
// lane writer a scans has ended: no hold below slot 1, its end marker, the
// root's (its reader closed the lane), or a floor above the root.
func (w *world) lastHoldEnded(a actor) bool {
	return a.j == 1 || w.v.writerSkipsLastHold || w.st.has(id{slotMarkID, a.k, a.j - 1}) ||
		w.st.has(id{markID, a.k, 0}) || a.k < w.floor
}

func (w *world) lock(i int) {
	a := &w.actors[i]
	a.try = max(a.try, w.floor) // a claim lies above the floor it knows (F3)
	a.pc = wClaimSent
	w.send(i, true, put{id{claimID, a.try, 0}, doc{owner: i, excl: true}})
}

func (w *world) writerReply(i int, res []result) {
	a := &w.actors[i]
	switch a.pc {
	case wClaimSent:
		if res[0] == duplicate {
			a.try++
			a.pc = wStart
			return
		}
		a.own, a.k, a.pc = a.try, a.try-1, wWalk
	case wSealSent:
		switch {
		case res[0] == inserted:
			a.pc = wWaitSlot
		case a.tryLock:
			w.tryFails(i)
		case w.v.sealAhead > 0:
			a.refused = true
			a.pc = wScan
		case w.v.sealBlindly:
			a.j++
			w.sendSeal(i)
		default:
			a.pc = wScan // read what took the slot
		}
	case wSealsSent:
		a.pc = wScan // read the slots from the first sealed: the lowest seal ends the lane
		if w.v.sealAheadSkipsRefused && slices.Contains(res, inserted) {
			a.pc = wWaitSlot // wait for the read hold seen, not for one that took a refused seal
		}
	}
}

// writerWalk looks at the claim below: another writer's is waited for; a
// lane's root, unless ended, has its lane scanned and sealed.
func (w *world) writerWalk(i int) {
	a := &w.actors[i]
	if a.k < max(w.floor, 1) { // below the floor every claim has ended
		w.beginWrite(i)
		return
	}
	d, ok := w.claimBelow(i)
	if !ok {
		return
	}
	switch {
	case d.excl:
		a.pc = wWaitMark
	case w.st.has(id{markID, a.k, 0}):
		a.k-- // a lane its reader closed: it holds nothing
	default:
		a.j, a.pc = 1, wScan
	}
}

// scan reads lane k's slot j: a read hold, look above it; a seal (another
// writer's), the lane ends there; missing, seal it.
func (w *world) scan(i int) {
	a := &w.actors[i]
	s, ok := w.st[id{slotID, a.k, a.j}]
	switch {
	case ok && s.seal:
		a.pc = wWaitSlot
	case ok && a.refused:
		// A read hold took the slot the seal was refused: seal it and the
		// slots above it at once, so that a reader looping faster than
		// this writer's round trip runs into one of them.
		a.refused = false
		a.j++
		puts := make([]put, 0, 1+w.v.sealAhead)
		for s := range 1 + w.v.sealAhead {
			puts = append(puts, put{id{slotID, a.k, a.j + s}, doc{owner: i, seal: true, by: a.own}})
		}
		a.pc = wSealsSent
		w.sendUnordered(i, puts...)
	case ok:
		a.j++
	case w.v.noSeal:
		a.pc = wWaitSlot
	case a.tryLock && !w.lastHoldEnded(*a):
		w.tryFails(i) // a reader holds: fail, and seal nothing more
	default:
		w.sendSeal(i)
	}
}

// sealReplyLost: the reply to writer i's seal (or seals ahead) never
// comes, and the seal may land at any time after. The writer reads the
// slot, as after a refused seal: its own seal or another's ends the lane
// there; a read hold, it scans on; missing, it seals again (the first, if
// it lands after, is refused as a duplicate). Taking the seal for landed
// would let a read hold take the slot unseen.
func (w *world) sealReplyLost(i int) {
	a := &w.actors[i]
	w.loseReply(i)
	a.refused = false
	if w.v.sealedOnLostReply {
		a.pc = wWaitSlot
		return
	}
	a.pc = wScan
}

func (w *world) sendSeal(i int) {
	a := &w.actors[i]
	a.pc = wSealSent
	w.send(i, true, put{id{slotID, a.k, a.j}, doc{owner: i, seal: true, by: a.own}})
}

func (w *world) beginWrite(i int) {
	a := &w.actors[i]
	a.holding, a.pc = true, wHold
	if w.holding(i, true) {
		w.fail("writer %d holds @%d beside another hold", i, a.own)
	}
	tok := a.own * tokenScale
	if tok <= w.maxTok {
		w.fail("writer %d's token %d not above an earlier hold's %d", i, tok, w.maxTok)
	}
	w.maxTok, w.maxWTok = tok, tok
	w.floor = max(w.floor, a.own)
}

func (w *world) unlock(i int) {
	a := &w.actors[i]
	a.holding, a.pc = false, finished
	w.send(i, false, put{id{markID, a.own, 0}, doc{owner: i}})
}

// giveUp withdraws the writer's claim; a seal on its way still lands.
func (w *world) giveUp(i int) {
	a := &w.actors[i]
	a.pc, a.awaiting = finished, false
	w.send(i, false, put{id{markID, a.own, 0}, doc{owner: i}})
}

// tryFails ends a TryLock that found a hold below it: its claim is
// withdrawn. Seals it left in lanes it passed before stay: their readers
// claim new roots, above it.
func (w *world) tryFails(i int) { w.giveUp(i) }
