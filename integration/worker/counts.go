package worker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-dsync/dsync/dsync/hint"
	"github.com/go-dsync/dsync/integration/history"
)

// countsEvery is how often a worker records its counts while they
// change: a worker killed loses at most that much of them.
const countsEvery = 500 * time.Millisecond

// counts are what a worker counts for the suite's summary and its checks
// that hints and runs were used: its hint transport's Stats, and the
// runs of a queue its engine read (recordingStore.GetRun).
type counts struct {
	runs atomic.Uint64

	mu    sync.Mutex
	hints *hint.Feed // nil: hints are off
	last  history.Event
}

// reportCounts records the worker's counts (EvCounts) every countsEvery
// while they change, for the life of the process, and once more as it
// exits (flushCounts).
func (w *worker) reportCounts() {
	go func() {
		for {
			time.Sleep(countsEvery)
			w.flushCounts()
		}
	}()
}

// takeHints is given the Client's hint transport, if it has one.
func (w *worker) takeHints(f *hint.Feed) {
	w.counts.mu.Lock()
	w.counts.hints = f
	w.counts.mu.Unlock()
}

// flushCounts records the worker's counts if they changed.
func (w *worker) flushCounts() {
	c := &w.counts
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := history.Event{Ev: history.EvCounts, Runs: c.runs.Load()}
	if c.hints != nil {
		s := c.hints.Stats()
		ev.Hints = &history.HintCounts{Sent: s.Sent, Received: s.Received, Rejected: s.Rejected, Refused: s.Refused, Taken: s.Taken, Woke: s.Woke}
	}
	if ev.Runs == c.last.Runs && (ev.Hints == nil) == (c.last.Hints == nil) && (ev.Hints == nil || *ev.Hints == *c.last.Hints) {
		return
	}
	c.last = ev
	w.emit(ev)
}
