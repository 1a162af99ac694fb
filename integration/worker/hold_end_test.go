package worker

import (
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/history"
)

// A hold's end is timed when the worker stops relying on it, not after
// reading the deadline in force: that read may wait (for the recorder's
// lock, held by a goroutine whose history write blocks), and the wait is
// no reliance. Here the read takes whatever time it takes, and the end
// must be timed before it began.
func TestHoldEndIsTimedBeforeTheDeadlineRead(t *testing.T) {
	r, path := testRecorder(t, time.Second)
	h := &hold{w: r.w, key: "k", token: 1}
	var readAt int64
	deadline := func() int64 {
		readAt = history.Now()
		for history.Now() == readAt {
			// The read takes time: at least until the clock moves.
		}
		return readAt + int64(time.Second)
	}
	h.end(deadline, history.SrcPred)
	evs := readEvents(t, path)
	if len(evs) != 1 || evs[0].Ev != history.EvEnd {
		t.Fatalf("events %+v, want one end", evs)
	}
	if end := evs[0].T; end > readAt {
		t.Fatalf("the end is timed at %d, %v after the deadline read began (%d)", end, time.Duration(end-readAt), readAt)
	}
	if evs[0].DL != readAt+int64(time.Second) {
		t.Errorf("the end's deadline is %d, want the one read, %d", evs[0].DL, readAt+int64(time.Second))
	}
}
