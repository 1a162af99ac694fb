package worker

import (
	"context"
	"testing"
	"time"

	"github.com/go-dsync/dsync/integration/history"
	"github.com/go-dsync/dsync/leader"
)

// A term whose context ends with ErrLeadershipLost ends as lost, however
// soon after the cancel the shard's function records its end: the end is
// recorded by the goroutine that saw the context end (a Partition shard's
// function), before the watch's goroutine may have run. Recorded as not
// lost, the checker took a loss signalled late for a silent loss (a hold
// relied on past its deadline "with no loss signal").
func TestTermEndedByItsLossIsRecordedLost(t *testing.T) {
	for i := range 200 {
		r, path := testRecorder(t, time.Second)
		w := r.w
		w.rec = r
		tctx, cancel := context.WithCancelCause(context.Background())
		h, deadline, stopWatch := w.beginTerm(tctx, "me", "k", uint64(i+1))
		cancel(leader.ErrLeadershipLost)
		<-tctx.Done()
		h.end(deadline, history.SrcPred)
		stopWatch()
		var ends, losses int
		for _, ev := range readEvents(t, path) {
			switch ev.Ev {
			case history.EvEnd:
				ends++
				if !ev.Lost {
					t.Fatalf("round %d: the term's end recorded as not lost: %+v", i, ev)
				}
			case history.EvLost:
				losses++
			}
		}
		if ends != 1 || losses != 1 {
			t.Fatalf("round %d: %d ends and %d losses recorded, want one of each", i, ends, losses)
		}
	}
}

// A term handed over (its context cancelled for another cause) ends as
// not lost.
func TestTermHandedOverIsNotRecordedLost(t *testing.T) {
	r, path := testRecorder(t, time.Second)
	w := r.w
	w.rec = r
	tctx, cancel := context.WithCancel(context.Background())
	h, deadline, stopWatch := w.beginTerm(tctx, "me", "k", 1)
	cancel()
	<-tctx.Done()
	h.end(deadline, history.SrcPred)
	stopWatch()
	for _, ev := range readEvents(t, path) {
		if ev.Ev == history.EvLost || ev.Ev == history.EvEnd && ev.Lost {
			t.Fatalf("a term handed over recorded as lost: %+v", ev)
		}
	}
}
