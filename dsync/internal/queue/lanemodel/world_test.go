package lanemodel

import (
	"fmt"
	"slices"
)

// A msg is a request on its way to the store: an ordered insert, applied
// one document per step, so that other requests may land between its
// documents and after its sender's later requests.
type msg struct {
	from int
	puts []put
	done []result
	call bool // its sender waits for the reply; otherwise sent and forgotten
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
	floor   int // every claim below has ended: a writer held above them
	bug     string
	v       *variant
}

func (w *world) clone() *world {
	c := *w
	c.st = w.st.clone()
	c.actors = slices.Clone(w.actors)
	c.flight = make([]msg, len(w.flight))
	for i, m := range w.flight {
		m.done = slices.Clone(m.done)
		c.flight[i] = m
	}
	return &c
}

// send puts a request on its way.
func (w *world) send(from int, call bool, puts ...put) {
	w.flight = append(w.flight, msg{from: from, puts: puts, call: call})
	if call {
		w.actors[from].awaiting = true
	}
}

// land applies the next document of request i.
func (w *world) land(i int) {
	m := &w.flight[i]
	r := w.st.insertOne(m.puts[len(m.done)])
	m.done = append(m.done, r)
	if r == inserted && len(m.done) < len(m.puts) {
		return
	}
	res := make([]result, len(m.puts))
	copy(res, m.done)
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
		b = append(b, '|', byte(a.pc), byte(a.left), byte(a.try), byte(a.root), byte(a.slot),
			byte(a.k), byte(a.j), byte(a.own), flag(a.awaiting), flag(a.holding), flag(a.crashed))
	}
	fl := make([]string, len(w.flight))
	for i, m := range w.flight {
		f := []byte{byte(m.from), flag(m.call), byte(len(m.done))}
		for _, p := range m.puts {
			f = append(f, byte(p.id.kind), byte(p.id.epoch), byte(p.id.slot), flag(p.doc.seal))
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
		byte(w.crashes), byte(w.floor))
	return string(b)
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}
