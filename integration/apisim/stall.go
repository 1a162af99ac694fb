package apisim

import (
	"math/rand/v2"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// The stalled link: on a share of the seeds whose operator empties the
// collections, now and then the gates a process sends (a start of a
// key's segment, an ordered insert of its gates and first claim, or a
// refresh's gates) are held back in the network until just after the
// next emptying, which the operator then makes soon. The sender gives up
// on the request; landing after the emptying, its gates name a segment
// of the history before it, in buckets they may still cover. A process
// that relied on them would hand out tokens from that segment, below
// those handed out before the emptying (issue 42, defect 3:
// CheckTokensAcrossEmptyings, plant.HistoryIgnored). The held-back
// requests of planRequest land at random times, rarely just after an
// emptying while their gates still cover: before the stalled link, 1
// seed in 200 caught plant.HistoryIgnored, not always the same one.
//
// The emptying comes 2.5 to 5 s after the first request held back: late
// enough for a hold of the sender's next try to come more than two seconds
// before it (the tokens the promise covers: CheckTokensAcrossEmptyings),
// early enough for the gates held back to cover still when they land (a
// start's gates cover until two bucket spans less the engine's margin
// of a second past their sending, at least 7 s here).
//
// The stalls draw from a generator of their own, so that a seed without
// them draws what it drew before they existed.

const (
	stallSeeds    = 0.5                     // the share of the seeds with emptyings that have the stalled link
	stallChance   = 0.1                     // a request of gates is held back with this chance,
	stallsMax     = 4                       // up to this many per run
	stallEmptyMin = 2500 * time.Millisecond // the emptying follows after this,
	stallEmptyMax = 5 * time.Second         // and before this,
	stallLandMax  = 20 * time.Millisecond   // and the request lands within this after it,
	stallMax      = 6 * time.Second         // or after this if no emptying came
)

// stalledGates begins the Kind of the ProcFault that records gates held
// back past an emptying, from when they were held to when they landed.
const stalledGates = "stalled gates of "

// stalledGatesFault is the fault of key's gates, held or sent at from and
// landed at to, after an emptying, by a process whose bucket span is
// span: the key waits for them until no start can meet them, at most
// three spans after they were sent.
func stalledGatesFault(key, how string, from, to time.Time, span time.Duration) ProcFault {
	return ProcFault{Proc: -1, Kind: stalledGates + key + how, From: from, To: to, Key: key, KeyWaits: from.Add(3 * span)}
}

// stalls is the state of a world's stalled link, guarded by its mu.
type stalls struct {
	rng  *rand.Rand // nil: no stalled link on this seed
	n    int        // requests held back so far
	held chan struct{}
	// emptyNow asks the operator to empty the collections now (one call
	// at most waits).
	emptyNow chan struct{}
}

// newStalls draws whether seed has a stalled link.
func newStalls(seed int64, emptyings bool) stalls {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7374616c6c))
	if !emptyings || rng.Float64() >= stallSeeds {
		return stalls{}
	}
	return stalls{rng: rng, emptyNow: make(chan struct{}, 1)}
}

// stallGates returns apply, or, for a request of p that sends gates and
// that the stalled link holds back, apply delayed until just after the
// next emptying (at the latest stallMax). It draws when the request is
// about to land, so that only requests that reach the store are held.
func (w *world) stallGates(docs []driver.Doc, span time.Duration, apply func(plan)) func(plan) {
	if w.stall.rng == nil || len(docs) == 0 || docs[0].Kind != driver.KindGate {
		return apply
	}
	return func(pl plan) {
		held, ok := w.stallNext()
		if ok {
			since := time.Now()
			late := make(chan struct{})
			t := time.AfterFunc(stallMax, func() { close(late) })
			select {
			case <-held:
				time.Sleep(w.rand(time.Millisecond, stallLandMax))
				w.fault("stalled-past-emptying")
				now := time.Now()
				w.mu.Lock()
				w.hist.ProcFaults = append(w.hist.ProcFaults, stalledGatesFault(docs[0].Key, " held back, then landed", since, now, span))
				w.mu.Unlock()
			case <-late:
			}
			t.Stop()
		}
		apply(pl)
	}
}

// stallNext draws whether to hold back a request of gates about to land,
// and returns the channel closed just after the next emptying. The first
// request held back since the last emptying asks the operator for one.
func (w *world) stallNext() (<-chan struct{}, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.stall
	if s.n >= stallsMax || s.rng.Float64() >= stallChance {
		return nil, false
	}
	s.n++
	w.fig.Faults["stalled"]++
	if s.held == nil {
		s.held = make(chan struct{})
		after := stallEmptyMin + time.Duration(s.rng.Int64N(int64(stallEmptyMax-stallEmptyMin)))
		held := s.held
		time.AfterFunc(after, func() {
			w.mu.Lock()
			pending := w.stall.held == held
			w.mu.Unlock()
			if pending {
				select {
				case w.stall.emptyNow <- struct{}{}:
				default:
				}
			}
		})
	}
	return s.held, true
}

// releaseStalls lands the requests held back, just after an emptying.
func (w *world) releaseStalls() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stall.held != nil {
		close(w.stall.held)
		w.stall.held = nil
	}
	select {
	case <-w.stall.emptyNow:
	default:
	}
}

// operatorWait is the operator's wait for his next maintenance: d, or
// less if the stalled link asks for an emptying (stalled).
func (w *world) operatorWait(d time.Duration) (stalled bool) {
	if w.stall.emptyNow == nil {
		time.Sleep(d)
		return false
	}
	own := make(chan struct{})
	t := time.AfterFunc(d, func() { close(own) })
	defer t.Stop()
	select {
	case <-own:
		return false
	case <-w.stall.emptyNow:
		return true
	}
}

// lateGates wraps apply, a request of gates sent now: when the request
// lands after an emptying that came after it was sent, and one of its
// gates landed (landed says so once apply returned), it is recorded as
// the stalled link's requests are, as a fault of the gates' key. Such a
// request, sent by an operation that ended just before the operator
// emptied (a leaving member's release, say) and landing just after, names
// a queue of the history before the emptying, which no process uses: the
// key waits until that queue's time is over, up to three bucket spans
// (docs/operations.md), and CheckPartition's liveness judges no window
// of it (stallsCover).
func (w *world) lateGates(docs []driver.Doc, span time.Duration, landed func() bool, apply func(plan)) func(plan) {
	if len(docs) == 0 || docs[0].Kind != driver.KindGate {
		return apply
	}
	sent := time.Now()
	return func(pl plan) {
		apply(pl)
		if !landed() {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if n := len(w.hist.Emptyings); n > 0 && w.hist.Emptyings[n-1].After(sent) {
			w.hist.ProcFaults = append(w.hist.ProcFaults, stalledGatesFault(docs[0].Key, " on their way during an emptying, then landed", sent, time.Now(), span))
		}
	}
}
