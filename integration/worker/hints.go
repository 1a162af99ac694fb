package worker

import (
	"sync"
	"time"

	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/integration/history"
)

// hintsEvery is how often a worker records its hint transport's counts
// while they change: a worker killed loses at most that much of them.
const hintsEvery = 500 * time.Millisecond

// hintReport is what a worker last recorded of its hint transport.
type hintReport struct {
	mu   sync.Mutex
	feed *hint.Feed // nil: hints are off
	last hint.Stats
}

// reportHints records f's counts (EvHints) every hintsEvery while they
// change, for the life of the process, and once more as it exits
// (flushHints): the suite adds them up, and checks that hints woke
// waiters.
func (w *worker) reportHints(f *hint.Feed) {
	w.hints.mu.Lock()
	w.hints.feed = f
	w.hints.mu.Unlock()
	go func() {
		for {
			time.Sleep(hintsEvery)
			w.flushHints()
		}
	}()
}

// flushHints records the hint transport's counts if they changed.
func (w *worker) flushHints() {
	r := &w.hints
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.feed == nil {
		return
	}
	s := r.feed.Stats()
	if s == r.last {
		return
	}
	r.last = s
	w.emit(history.Event{Ev: history.EvHints, Hints: &history.HintCounts{
		Sent: s.Sent, Received: s.Received, Rejected: s.Rejected, Refused: s.Refused, Taken: s.Taken, Woke: s.Woke}})
}
