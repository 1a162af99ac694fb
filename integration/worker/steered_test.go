package worker

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A steered worker whose term is handed over (a newer version preempts
// it) finishes the term, and records its end, before the next leader is
// elected: its terms run under Election.Run, which releases the lease
// only once the term's function has returned. A term of Campaign's is
// released the moment it is preempted, while the worker may still be in
// its register write (the checker then finds two leaders at once).
func TestSteeredWorkerPreemptedEndsItsTermFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ew := newElectionWorld(t)
		ew.w.cfg.Version = "1.0.0"
		e1 := ew.election(t, true, ew.w.cfg.steering()...)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ew.w.runSteered(ctx, e1) }()
		<-ew.reg.writing // w1 leads, and is in its register write

		newer := Config{Version: "1.1.0"}
		won := rival(ew.election(t, false, newer.steering()...))
		time.Sleep(3 * electionTTL) // heartbeats: w1 sees the newer candidate, and gives way
		var at int64
		ok, early := false, false
		select {
		case at, ok = <-won:
			early = true
			t.Errorf("the newer candidate was elected while w1, preempted, was still in its term's write")
		default:
		}
		close(ew.reg.proceed)
		if !early {
			at, ok = <-won
		}
		if !ok {
			t.Fatal("the newer candidate was not elected")
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("runSteered: %v", err)
		}
		ew.checkEndedBefore(t, at)
	})
}
