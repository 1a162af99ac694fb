package lanemodel

import (
	"fmt"
	"strings"
)

// A variant switches the model's protocol away from the proposal, to show
// that the explorer finds what each rule prevents.
type variant struct {
	noSeal                bool // a writer reads a lane's end but does not seal it
	writerSkipsLastHold   bool // a writer seals but does not wait for the lane's last read hold
	sealBlindly           bool // a writer whose seal was refused seals the next slot without reading
	readerIgnoresSeal     bool // a reader whose slot was sealed holds anyway
	readerSkipsWalk       bool // a reader's first hold of a lane skips the walk below its root
	readerSkipsChain      bool // a reader holds on its slot's insert without the last slot's shadow
	readerSkipsFloor      bool // a lane's first hold does not check its root against the floor
	sealAhead             int  // after a refused seal, a writer seals the next slot and this many above it, unordered
	sealAheadSkipsRefused bool // and waits for the read hold it saw, not for the slots below its lowest seal
	crashes               int  // how many actors may crash
	prunes                bool // lanes below the floor are pruned
	empties               bool // the store is emptied once, while no lock is held or awaited
	pruneSealFirst        bool // a prune may delete a lane's seal before its shadows
	lostReplies           int  // how many replies to a reader's slot insert or a writer's seal may be lost (its outcome unknown)
	holdOnLostReply       bool // a reader whose slot insert's reply was lost takes it for a hold
	sealedOnLostReply     bool // a writer whose seal's reply was lost takes it for a landed seal
}

// A config is the actors of one exploration.
type config struct {
	readers []int // each reader's read holds, in turn
	writers int
	tries   int // writers that TryLock
	v       variant
}

// An outcome is what one exploration found.
type outcome struct {
	states int
	bug    string   // the first violation, or a deadlock
	trace  []string // the steps that led to it
}

// explore runs every interleaving of the config's actors, requests and
// replies, depth first, and remembers the states it has seen.
func explore(c config, limit int) outcome {
	w := &world{st: store{}, v: &c.v}
	for _, n := range c.readers {
		w.actors = append(w.actors, newReader(n))
	}
	for range c.writers {
		w.actors = append(w.actors, newWriter())
	}
	for range c.tries {
		t := newWriter()
		t.tryLock = true
		w.actors = append(w.actors, t)
	}
	seen := map[string]bool{}
	var out outcome
	var path []string
	var dfs func(w *world) bool
	dfs = func(w *world) bool {
		k := w.key()
		if seen[k] {
			return false
		}
		seen[k] = true
		out.states++
		if out.states > limit {
			out.bug = fmt.Sprintf("more than %d states", limit)
			return true
		}
		steps := w.steps()
		if onlyGiveUps(steps) && !w.allFinished() {
			out.bug = "deadlock: " + w.waiting()
			out.trace = append([]string(nil), path...)
			return true
		}
		for _, s := range steps {
			n := w.clone()
			s.do(n)
			path = append(path, s.what)
			if n.bug != "" {
				out.bug, out.trace = n.bug, append([]string(nil), path...)
				return true
			}
			if dfs(n) {
				return true
			}
			path = path[:len(path)-1]
		}
		return false
	}
	dfs(w)
	return out
}

// A step is one thing that may happen next.
type step struct {
	what   string
	do     func(*world)
	giveUp bool // a writer's timeout: always possible, so no way out of a deadlock
}

func onlyGiveUps(steps []step) bool {
	for _, s := range steps {
		if !s.giveUp {
			return false
		}
	}
	return true
}

func (w *world) steps() []step {
	var out []step
	for i, m := range w.flight {
		for _, d := range m.next() {
			out = append(out, step{what: fmt.Sprintf("%v lands (actor %d)", m.puts[d].id, m.from), do: func(w *world) { w.land(i, d) }})
		}
	}
	out = append(out, w.pruneSteps()...)
	out = append(out, w.emptySteps()...)
	for i, a := range w.actors {
		if a.pc == finished {
			continue
		}
		if w.crashes < w.v.crashes {
			out = append(out, step{what: fmt.Sprintf("actor %d crashes", i), do: func(w *world) { w.crash(i) }})
		}
		if a.writer {
			out = append(out, w.writerSteps(i)...)
			if a.awaiting && (a.pc == wSealSent || a.pc == wSealsSent) && w.lost < w.v.lostReplies {
				out = append(out, step{what: fmt.Sprintf("writer %d's seal: reply lost", i), do: func(w *world) { w.sealReplyLost(i) }})
			}
			continue
		}
		for _, f := range w.readerSteps(i) {
			out = append(out, step{what: fmt.Sprintf("reader %d at %d", i, a.pc), do: f})
		}
		if a.awaiting && a.pc == rSlotSent && w.lost < w.v.lostReplies {
			out = append(out, step{what: fmt.Sprintf("reader %d's slot insert: reply lost", i), do: func(w *world) { w.replyLost(i) }})
		}
	}
	return out
}

func (w *world) allFinished() bool {
	for _, a := range w.actors {
		if a.pc != finished {
			return false
		}
	}
	return true
}

func (w *world) waiting() string {
	var b strings.Builder
	for i, a := range w.actors {
		if a.pc != finished {
			fmt.Fprintf(&b, "actor %d %+v; ", i, a)
		}
	}
	return b.String()
}
