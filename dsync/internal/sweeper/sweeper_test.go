package sweeper

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestSweepsUntilStopped: sweeps come about once per span, one goroutine
// however often Start is called, none after Stop, and none at all when
// Start comes after Stop.
func TestSweepsUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const span = time.Minute
		var s Sweeper
		var running sync.WaitGroup
		var sweeps atomic.Int64
		sweep := func(context.Context) { sweeps.Add(1) }
		s.Start(&running, func() time.Duration { return span }, sweep)
		s.Start(&running, func() time.Duration { return span }, sweep) // no second goroutine
		time.Sleep(10 * span)
		synctest.Wait()
		// Each pause lies in [span/2, 3·span/2): 10 spans hold 7 to 20 sweeps.
		if n := sweeps.Load(); n < 7 || n > 20 {
			t.Fatalf("%d sweeps in 10 spans, want 7 to 20 (one goroutine)", n)
		}
		s.Stop()
		running.Wait()
		n := sweeps.Load()
		time.Sleep(10 * span)
		if m := sweeps.Load(); m != n {
			t.Fatalf("%d sweeps after Stop", m-n)
		}

		var late Sweeper
		late.Stop()
		late.Start(&running, func() time.Duration { return span }, sweep)
		time.Sleep(10 * span)
		running.Wait()
		if m := sweeps.Load(); m != n {
			t.Fatalf("a Sweeper started after Stop swept %d times", m-n)
		}
	})
}
