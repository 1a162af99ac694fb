package queue_test

import (
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/dsync/internal/queue"
)

// The double emptying. Segments of two histories of the store share a
// number when they start in one quantum of store time (segment.go's
// base), and a process keeps what it knew of a key's segment across an
// emptying (it is not told): its next claim joins the segment it knew,
// and must not hold on the coverage it knew when the store's segment of
// that number is another's (history.go, claimOfHistory). Emptyings at
// random times almost never bring two starts of a key into one quantum
// across them (BugClaimHistoryIgnored went uncaught on 3,006 seeds), so
// on one seed in eight an operator empties the store twice in a row,
// with a process of another span between:
//
//   - once no lock is held, every process stops claiming and the store
//     is emptied (the first emptying);
//   - a process started just then with buckets of simTwiceSpan (the
//     operator's, misconfigured) claims k1, alone, and its start records
//     its span and begins the segment;
//   - the moment it holds, everyone stops claiming again, and the store
//     is emptied again as soon as nothing is held (the second);
//   - the others claim at once, and their first start of k1, in the next
//     history and with the usual span, may come within the quantum of the
//     longer-span process's start: its segment then has that one's number
//     (twiceMet counts these);
//   - the longer-span process claims k1 again once that start landed (or
//     simTwiceLag after the second emptying), in a session opened since
//     (its own went with the emptying), on what it knew: its coverage, of
//     buckets of its span, outlasts the store's by seconds. Its walk
//     meets a claim of the new history and must give its claim up; with
//     the check planted away (BugClaimHistoryIgnored) it holds, and long
//     (an operator's job), so that the store's coverage ends while it
//     holds and another process's start holds beside it.
//
// The longer-span process claims only k1: a start of any other key in
// the next history would read the store's span and end its part
// (loseSpan). On these seeds the quantum is the coarsest the margin
// allows (simTwiceQuantum), for every process, so that the second
// emptying falls within the quantum of the start before it more often.
// Whether a seed has the double emptying, and its times, are drawn from
// a stream of their own, so that the other seeds run as they did before
// (the seeds that have it run otherwise from the start: their quantum).

const (
	// simTwiceSpan is the longer span: its coverage outlasts a segment
	// of simSpan started in the same quantum by several seconds.
	simTwiceSpan = 4 * simSpan
	// simTwiceWait bounds each wait of the double emptying (for an
	// emptying, or for the longer-span process to hold): past it the
	// workers claim again and the fault is over.
	simTwiceWait = 3 * time.Second
	// simTwiceLag: the longer-span process claims again once a start of
	// its key by the others has landed after the second emptying, or
	// after this.
	simTwiceLag = 300 * time.Millisecond
	// simTwiceQuantum is the quantum of store time on these seeds: the
	// coarsest the margin allows, so that the second emptying comes
	// within the quantum of the start before it more often.
	simTwiceQuantum = simSkew
	// simTwiceHold: after the second emptying, the longer-span process
	// holds for this long and up to twice as long.
	simTwiceHold = 2 * time.Second
)

// The phases of the double emptying.
const (
	twiceOff      = iota // not begun, or over: the workers claim as usual
	twiceFirst           // everyone quiet, waiting for the first emptying
	twiceAlone           // the longer-span process claims alone, until it holds
	twiceSecond          // everyone quiet, waiting for the second emptying
	twiceOthers          // everyone claims but the longer-span process
	twiceFinished        // over
)

// simTwice is the double emptying on the seeds that draw it.
type simTwice struct {
	rng   *rand.Rand
	phase int
	x     *owner // the longer-span process (nil until it starts)
	until time.Duration
	// key, seg and history: the segment the longer-span process started
	// between the emptyings (seg 0: none yet), and its history.
	key     string
	seg     uint64
	history string
	// dropped is the longer-span process's session when the store was
	// emptied the second time, which went with it.
	dropped *simSession
}

// newSimTwice draws whether seed has the double emptying: one seed in
// eight.
func newSimTwice(seed int64) *simTwice {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x2e3e7))
	if rng.IntN(8) != 0 {
		return nil
	}
	return &simTwice{rng: rng}
}

// schedule begins the double emptying at a random time of the run.
func (w *simTwice) schedule(s *sim) {
	at := 2*time.Second + time.Duration(w.rng.Int64N(int64(simLength-8*time.Second)))
	s.at(at, func() {
		if w.phase != twiceOff {
			return
		}
		// The operator's process, with the longer span: it knows
		// nothing, and claims nothing until the store is emptied.
		s.otherSpan, s.otherSpanLen = len(s.owners)+1, simTwiceSpan
		w.x = newOwner(s, len(s.owners)+1)
		s.owners = append(s.owners, w.x)
		s.spawn(w.x, w.x.keeper)
		s.spawn(w.x, w.x.sampler)
		// It claims one key, a Mutex's: a start of any other in the
		// next history would read the store's span and end its part.
		s.spawn(w.x, func(a *actor) { w.x.worker(a, []string{"k1"}) })
		w.enter(s, twiceFirst)
		s.tracef("TWICE: %s of span %v started, waiting for an emptying", w.x.name, simTwiceSpan)
		w.emptyWhenReady(s, twiceFirst)
	})
}

func (w *simTwice) enter(s *sim, phase int) {
	w.phase, w.until = phase, s.now+simTwiceWait
}

// emptyWhenReady empties the store as soon as nothing is held (checking
// every millisecond), while the phase is still phase.
func (w *simTwice) emptyWhenReady(s *sim, phase int) {
	switch {
	case w.phase != phase:
	case s.now >= w.until:
		w.enter(s, twiceFinished)
	case s.resetReady("empty"):
		s.reset("empty", 0)
		if phase == twiceFirst {
			w.enter(s, twiceAlone)
			w.awaitHold(s)
		} else {
			s.stats.twice++
			w.dropped = w.x.sess
			w.enter(s, twiceOthers)
			s.at(s.now+simTwiceLag, func() {
				if w.phase == twiceOthers {
					w.enter(s, twiceFinished)
				}
			})
		}
		s.tracef("TWICE: emptied, phase %d", w.phase)
	default:
		s.at(s.now+time.Millisecond, func() { w.emptyWhenReady(s, phase) })
	}
}

// awaitHold waits for the longer-span process to hold, and then for the
// second emptying.
func (w *simTwice) awaitHold(s *sim) {
	switch {
	case w.phase != twiceAlone:
	case s.now >= w.until:
		w.enter(s, twiceFinished)
	case len(w.x.holds) > 0:
		w.enter(s, twiceSecond)
		s.tracef("TWICE: %s holds, waiting for the second emptying", w.x.name)
		w.emptyWhenReady(s, twiceSecond)
	default:
		s.at(s.now+time.Millisecond, func() { w.awaitHold(s) })
	}
}

// quiet reports whether o is to claim nothing now.
func (w *simTwice) quiet(o *owner) bool {
	if w == nil {
		return false
	}
	switch w.phase {
	case twiceFirst, twiceSecond:
		return true
	case twiceAlone:
		return o != w.x
	case twiceOthers:
		return o == w.x
	case twiceFinished:
		// Its session went with the second emptying: a claim made in
		// it would be lost as soon as its keeper finds it missing.
		return o == w.x && o.sess == w.dropped
	}
	return false
}

// started notes a start whose gate g landed: the longer-span process's
// between the emptyings, or one after them that took its number.
func (w *simTwice) started(s *sim, g queue.Doc) {
	switch {
	case w == nil:
	case w.phase == twiceAlone && w.seg == 0:
		w.key, w.seg, w.history = g.Key, g.Seg, g.Nonce
	case w.seg == 0 || s.stats.twice == 0 || g.Key != w.key || g.Nonce == w.history:
	default:
		if g.Seg == w.seg {
			s.stats.twiceMet++
			s.tracef("TWICE: %q segment %d started again in the next history", g.Key, g.Seg)
		}
		w.seg = 0
		if w.phase == twiceOthers {
			// The longer-span process claims again, its start's key
			// started in the store's new history.
			w.enter(s, twiceFinished)
		}
	}
}

// hold returns how long o holds a lock it came to hold, d as drawn: the
// longer-span process holds long once the store was emptied twice (an
// operator's job, run under the lock), so that the store's coverage of
// the segment it joined can end while it holds.
func (w *simTwice) hold(o *owner, d time.Duration) time.Duration {
	if w == nil || o != w.x || w.phase != twiceFinished {
		return d
	}
	return simTwiceHold + time.Duration(w.rng.Int64N(int64(simTwiceHold)))
}
