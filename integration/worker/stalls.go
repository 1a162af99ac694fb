package worker

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/integration/history"
)

// Stall monitoring: a goroutine sleeps stallTick at a time; a wake-up
// more than stallMin late means the process was not scheduled (the
// host is overloaded, or the process was stopped), and is recorded.
const (
	stallTick = 5 * time.Millisecond
	stallMin  = 10 * time.Millisecond
)

// monitorStalls records the times this process was not scheduled. The
// library cannot signal a loss on time while its process does not run
// (the limit dsync documents for paused processes); these records let the
// checker tell that apart from a late signal.
func (w *worker) monitorStalls(ctx context.Context) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	last := history.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := history.Now()
		if now-last > int64(stallTick+stallMin) {
			w.emit(history.Event{Ev: history.EvStall, T: last + int64(stallTick), End: now})
		}
		last = now
	}
}
