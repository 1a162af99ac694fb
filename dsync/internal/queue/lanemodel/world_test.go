package lanemodel

import (
	"fmt"
	"slices"
)

// A msg is a request on its way to the store: an insert, applied one
// document per step, so that other requests may land between its
// documents and after its sender's later requests. An ordered insert
// applies its documents in turn and stops at the first duplicate; an
// unordered one applies each, in any order.
type msg struct {
	from      int
	puts      []put
	res       []result // each document's, notTried until applied
	call      bool     // its sender waits for the reply; otherwise sent and forgotten
	unordered bool
}

// next lists the documents of m that may land next.
func (m msg) next() []int {
	var out []int
	for i, r := range m.res {
		if r != notTried {
			continue
		}
		out = append(out, i)
		if !m.unordered {
			break
		}
	}
	return out
}

// complete says whether m has nothing left to apply.
func (m msg) complete() bool {
	for _, r := range m.res {
		if r == duplicate && !m.unordered {
			return true
		}
		if r == notTried {
			return false
		}
	}
	return true
}

// tokenScale separates a read hold's slot from its root's epoch in a
// token: a reader's token is root×tokenScale + slot, a writer's its
// epoch×tokenScale, so that read holds of one lane have tokens of their
// own, ordered against every writer's.
const tokenScale = 1000

// A world is one state of the model: the store, the actors, the requests
// and replies on their way.
type world struct {
	st      store
	actors  []actor
	flight  []msg
	maxTok  int // the highest token of a hold begun so far
	maxWTok int // the highest token of a writer's hold begun so far
	crashes int // actors crashed so far
	lost    int // replies lost so far
	floor   int // every claim below has ended: a writer held above them, or the store was emptied
	top     int // the highest epoch ever stored
	emptied bool
	bug     string
	v       *variant
}

func (w *world) clone() *world {
	c := *w
	c.st = w.st.clone()
	c.actors = slices.Clone(w.actors)
	c.flight = make([]msg, len(w.flight))
	for i, m := range w.flight {
		m.res = slices.Clone(m.res)
		c.flight[i] = m
	}
	return &c
}

// send puts an ordered insert on its way.
func (w *world) send(from int, call bool, puts ...put) {
	w.flight = append(w.flight, msg{from: from, puts: puts, res: make([]result, len(puts)), call: call})
	if call {
		w.actors[from].awaiting = true
	}
}

// sendUnordered puts an unordered insert on its way, for a reply.
func (w *world) sendUnordered(from int, puts ...put) {
	w.send(from, true, puts...)
	w.flight[len(w.flight)-1].unordered = true
}

// land applies document d of request i.
func (w *world) land(i, d int) {
	m := &w.flight[i]
	p := m.puts[d]
	if p.id.kind == claimID && !p.doc.excl {
		p.doc.after = w.writersQueued()
	}
	if p.id.kind == claimID {
		w.top = max(w.top, p.id.epoch)
	}
	m.res[d] = w.st.insertOne(p)
	if !m.complete() {
		return
	}
	res := slices.Clone(m.res)
	from, call := m.from, m.call
	w.flight = slices.Delete(w.flight, i, i+1)
	if call {
		w.answer(from, res)
	}
}

// answer hands a reply to its actor, unless the actor gave up waiting.
// The model hands it over as the request's last document lands: a read
// hold then begins as early as it could, and the checks are the stricter
// for it; the rest of what a reply's delay allows (another request
// landing after this one, before its sender acts) is the same as that
// request landing first.
func (w *world) answer(to int, res []result) {
	a := &w.actors[to]
	if !a.awaiting {
		return
	}
	a.awaiting = false
	if a.writer {
		w.writerReply(to, res)
	} else {
		w.readerReply(to, res)
	}
}

// loseReply drops the reply actor i waits for: its request still lands,
// sent and forgotten, and the actor goes on not knowing its outcome.
func (w *world) loseReply(i int) {
	for m := range w.flight {
		if w.flight[m].from == i && w.flight[m].call {
			w.flight[m].call = false
		}
	}
	w.actors[i].awaiting = false
	w.lost++
}

// claimBelow reads the claim actor i's walk has reached. Every epoch below
// a stored one was stored before (F1), and only an emptying deletes claims,
// above which walks stop: a missing one is a violation.
func (w *world) claimBelow(i int) (doc, bool) {
	k := w.actors[i].k
	d, ok := w.st[id{claimID, k, 0}]
	if !ok {
		w.fail("actor %d: claim @%d below its own missing", i, k)
	}
	return d, ok
}

// writersQueued lists the writers whose claims are stored, a bit each.
func (w *world) writersQueued() uint8 {
	var mask uint8
	for i, d := range w.st {
		if i.kind == claimID && d.excl {
			mask |= 1 << d.owner
		}
	}
	return mask
}

// holding says whether an actor other than self holds: a writer, or (with
// readersToo) a reader.
func (w *world) holding(self int, readersToo bool) bool {
	for i, a := range w.actors {
		if i != self && a.holding && (a.writer || readersToo) {
			return true
		}
	}
	return false
}

func (w *world) fail(format string, args ...any) {
	if w.bug == "" {
		w.bug = fmt.Sprintf(format, args...)
	}
}

// key is the state's canonical form, for the explorer's memory.
func (w *world) key() string {
	b := []byte(w.st.key())
	for _, a := range w.actors {
		b = append(b, '|', flag(a.writer), byte(a.pc), byte(a.left), byte(a.try), byte(a.root), byte(a.slot),
			byte(a.k), byte(a.j), byte(a.own), flag(a.awaiting), flag(a.holding), flag(a.crashed), flag(a.tryLock), flag(a.refused))
	}
	fl := make([]string, len(w.flight))
	for i, m := range w.flight {
		f := []byte{byte(m.from), flag(m.call), flag(m.unordered)}
		for d, p := range m.puts {
			f = append(f, byte(p.id.kind), byte(p.id.epoch), byte(p.id.slot),
				byte(p.doc.owner), flag(p.doc.excl), flag(p.doc.seal), byte(p.doc.by), byte(m.res[d]))
		}
		fl[i] = string(f)
	}
	slices.Sort(fl)
	b = append(b, '|')
	for _, f := range fl {
		b = append(b, f...)
		b = append(b, ';')
	}
	b = append(b, '|', byte(w.maxTok/tokenScale), byte(w.maxTok%tokenScale), byte(w.maxWTok/tokenScale),
		byte(w.crashes), byte(w.lost), byte(w.floor), byte(w.top), flag(w.emptied))
	return string(b)
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}
